package prune

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/converge-go/converge/store"
)

// Pass is what one pass of a Pruner did.
type Pass struct {
	// Started is when the pass started.
	Started time.Time
	// Identity is the store's identity the pass ran against, Revision the
	// revision of the desired set it read, Desired how many objects it
	// held.
	Identity string
	Revision int64
	Desired  int
	// World is the selection made of the world. When a gate refused the
	// pass, World.Prune lists what was withheld.
	World Selection
	// Pruned lists the objects deleted (Delete returned nil).
	Pruned []WorldObject
	// Err is why nothing was deleted (a gate refused: it matches
	// ErrRefused; or a read failed), or the joined errors of the deletes
	// that failed; nil when the pass did all it chose to.
	Err error
}

// pass runs one pass: it reads what the gate needs, in this order — the
// controller's readiness, the store's identity, the world, the desired
// set, the identity and readiness again — then selects, checks and
// deletes. The world is listed before the desired set: an object the
// controller made for a desired key was made after the key was in the
// store, so the desired set read afterwards holds the key unless it has
// been deleted since, and then pruning its object is right.
func (p *Pruner[T]) pass(ctx context.Context) Pass {
	pass := Pass{Started: time.Now()}
	facts := Facts{Ready: p.c.Ready(), AllowEmpty: p.opts.AllowEmpty}
	if facts.Ready != nil {
		pass.Err = Check(facts)
		return pass
	}
	var err error
	if facts.Before, err = p.id.Identity(ctx); err != nil {
		pass.Err = fmt.Errorf("prune: read the store's identity: %w", err)
		return pass
	}
	pass.Identity = facts.Before
	world, err := p.opts.World(ctx)
	if err != nil {
		pass.Err = fmt.Errorf("prune: list the world: %w", err)
		return pass
	}
	objs, rev, err := p.s.List(ctx, p.opts.Prefix)
	if err != nil {
		pass.Err = fmt.Errorf("prune: list the desired set: %w", err)
		return pass
	}
	pass.Revision, pass.Desired, facts.Desired = rev, len(objs), len(objs)
	if facts.After, err = p.id.Identity(ctx); err != nil {
		pass.Err = fmt.Errorf("prune: read the store's identity: %w", err)
		return pass
	}
	if facts.After == facts.Before {
		p.mark.Learn(facts.After)
	}
	facts.Ready = p.c.Ready()
	desired := make(map[string]struct{}, len(objs))
	for _, obj := range objs {
		desired[obj.Key] = struct{}{}
	}
	mine := Mark{Owner: p.opts.Name, Store: facts.Before}
	pass.World = Select(world, mine, p.opts.Prefix, func(key string) bool {
		_, ok := desired[key]
		return ok
	})
	if pass.Err = Check(facts); pass.Err != nil {
		return pass
	}
	pass.Pruned, pass.Err = p.delete(ctx, pass.World.Prune)
	return pass
}

// delete deletes objs from the world. Then, for each key whose object it
// deleted, it reads the store again: a key created again meanwhile (after
// the desired set was read, perhaps reconciled before the delete) is handed
// to the controller, which makes its object again. A key still absent is
// not: a controller whose cache has not yet seen its deletion would make
// the object again from the stale cache. A failed delete does not stop the
// others.
func (p *Pruner[T]) delete(ctx context.Context, objs []WorldObject) ([]WorldObject, error) {
	var pruned []WorldObject
	var errs []error
	for _, obj := range objs {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		if err := p.opts.Delete(ctx, obj); err != nil {
			errs = append(errs, fmt.Errorf("prune: delete %s (%s): %w", obj.Name, obj.Key, err))
			continue
		}
		pruned = append(pruned, obj)
		if _, err := p.s.Get(ctx, obj.Key); errors.Is(err, store.ErrNotFound) {
			continue
		}
		// Desired again, or the store cannot say: let the controller judge.
		if err := p.c.Enqueue(obj.Key); err != nil {
			p.opts.Logger.Warn("the controller refused a pruned key: is Options.Prefix the controller's?", "key", obj.Key, "err", err)
		}
	}
	return pruned, errors.Join(errs...)
}

// record keeps pass as the latest and logs it: a pass that deleted
// something or was refused with something to delete at Info or Warn, a
// quiet one at Debug.
func (p *Pruner[T]) record(pass Pass) {
	p.mu.Lock()
	p.last, p.ran = pass, true
	p.mu.Unlock()
	log := p.opts.Logger
	attrs := []any{"revision", pass.Revision, "desired", pass.Desired, "pruned", len(pass.Pruned),
		"kept", pass.World.Kept, "unmarked", pass.World.Unmarked, "otherOwner", pass.World.OtherOwner,
		"otherStore", pass.World.OtherStore, "outOfView", pass.World.OutOfView}
	if pass.World.OtherStore > 0 {
		log.Warn("the world holds objects this operator made from another store: they are never pruned; was the store replaced?",
			"identity", pass.Identity, "objects", pass.World.OtherStore)
	}
	switch {
	case errors.Is(pass.Err, ErrRefused) && notReady(pass.Err):
		log.Debug("prune waits for the first sync", attrs...)
	case errors.Is(pass.Err, ErrRefused) && len(pass.World.Prune) == 0:
		log.Debug("prune refused, with nothing to prune", append(attrs, "err", pass.Err)...)
	case pass.Err != nil:
		log.Warn("prune did not delete all it would", append(attrs, "withheld", len(pass.World.Prune)-len(pass.Pruned), "err", pass.Err)...)
	case len(pass.Pruned) > 0:
		log.Info("pruned", append(attrs, pruneNames(pass.Pruned))...)
	default:
		log.Debug("nothing to prune", attrs...)
	}
}

// pruneNames is the "names" attribute of a pass's log line: up to 16.
func pruneNames(objs []WorldObject) slog.Attr {
	names := make([]string, 0, min(len(objs), 16))
	for _, obj := range objs[:min(len(objs), 16)] {
		names = append(names, obj.Name)
	}
	return slog.Any("names", names)
}
