package shard

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/store"
)

// written holds the assigner's own writes until its mirrors show them, so
// that a round following another before the watch events arrive neither
// repeats them nor conflicts with them.
type written struct {
	plan   store.Object[planRecord]
	owners map[string]store.Object[ownerRecord]
}

// assign runs while this replica is the assigner: it follows the member
// records, declares dead the ones it has seen unchanged for their TTL,
// keeps the plan balanced over the live members, and names an owner for
// every bucket that has none or a dead one. Every write carries the
// election lease's guard, so a deposed assigner writes nothing.
func (r *Replica) assign(ctx context.Context) error {
	lk, ok := lock.FromContext(ctx)
	if !ok {
		return nil
	}
	r.setAssigning(true)
	defer r.setAssigning(false)
	mm := r.memberM
	w := &written{owners: map[string]store.Object[ownerRecord]{}}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		mw, ow, pw := mm.changed(), r.ownerM.changed(), r.planM.changed()
		next := r.assignOnce(ctx, lk.Guard(), mm, w)
		timer.Reset(next)
		select {
		case <-ctx.Done():
			return nil
		case <-mw:
		case <-ow:
		case <-pw:
		case <-timer.C:
		}
	}
}

func (r *Replica) setAssigning(on bool) {
	r.mu.Lock()
	r.assigning = on
	r.mu.Unlock()
}

// assignOnce makes one round of the assigner's work from the mirrored
// records and returns how long until the next round is due without a
// change (a member's TTL running out, or a retry after a failure).
func (r *Replica) assignOnce(ctx context.Context, guard store.Guard, mm *mirror[lock.Record], w *written) time.Duration {
	members, ok1 := mm.snapshot()
	owners, ok2 := r.ownerM.snapshot()
	_, ok3 := r.planM.snapshot()
	if !ok1 || !ok2 || !ok3 {
		return r.retry()
	}
	now := time.Now()
	next := time.Hour
	live := make([]member, 0, len(members))
	for key, o := range members {
		// Every replica follows the member records, so that a new
		// assigner judges from when it first saw each revision, not
		// from when it took over (which would add a TTL after the
		// previous assigner's own crash).
		wait := max(r.opts.TTL, o.Value.TTL)
		if left := wait - now.Sub(mm.since(key)); left > 0 {
			next = min(next, left)
			live = append(live, member{ID: r.keys.memberID(key), Term: o.CreateRevision})
			continue
		}
		// Unchanged for a TTL: the member is dead. Deleting its record
		// makes its writes fail (they carry its term's guard) and its
		// buckets ownerless, to be named a new owner below.
		if _, err := r.members.Delete(ctx, key, o.Revision, guard); err != nil {
			r.opts.Logger.Warn("cannot delete a dead member's record", "member", key, "err", err)
			next = min(next, r.retry())
		} else {
			r.opts.Logger.Info("member declared dead", "member", r.keys.memberID(key))
		}
	}
	slices.SortFunc(live, func(a, b member) int { return strings.Compare(a.ID, b.ID) })
	index := make(map[member]int32, len(live))
	for i, m := range live {
		index[m] = int32(i)
	}

	// Stick to the last plan where its target is alive, else to the
	// current owner.
	pobj, hasPlan := r.planM.get(r.keys.plan())
	if w.plan.Revision > pobj.Revision {
		pobj, hasPlan = w.plan, true
	}
	for key, o := range w.owners {
		if m, ok := owners[key]; ok && m.Revision >= o.Revision {
			delete(w.owners, key) // the mirror has caught up
			continue
		}
		owners[key] = o
	}
	var plan *planRecord
	if hasPlan {
		plan = &pobj.Value
	}
	prev := make([]int32, r.opts.Buckets)
	for b := range prev {
		prev[b] = -1
		if t, ok := plan.target(b); ok {
			if i, ok := index[t]; ok {
				prev[b] = i
				continue
			}
		}
		if o, ok := owners[r.keys.owner(b)]; ok {
			if i, ok := index[member{ID: o.Value.Owner, Term: o.Value.Term}]; ok {
				prev[b] = i
			}
		}
	}
	want := planRecord{Members: live, Owners: assign(prev, len(live))}
	if !hasPlan || !slices.Equal(plan.Members, want.Members) || !slices.Equal(plan.Owners, want.Owners) {
		var err error
		var obj store.Object[planRecord]
		if hasPlan {
			obj, err = r.plans.Update(ctx, r.keys.plan(), want, pobj.Revision, guard)
		} else {
			obj, err = r.plans.Create(ctx, r.keys.plan(), want, guard)
		}
		if err == nil {
			w.plan = obj
		}
		if err != nil {
			r.opts.Logger.Debug("cannot write the plan; retrying", "err", err)
			return min(next, r.retry())
		}
		r.opts.Logger.Info("plan written", "members", len(live))
	}
	if len(live) == 0 {
		return next
	}

	// Name an owner for every bucket without a live one.
	var g errgroup.Group
	g.SetLimit(handoverConcurrency)
	failed := make(chan struct{}, 1)
	var mu sync.Mutex
	for b := range r.opts.Buckets {
		o, ok := owners[r.keys.owner(b)]
		if ok {
			if _, alive := index[member{ID: o.Value.Owner, Term: o.Value.Term}]; alive {
				continue
			}
		}
		to := live[want.Owners[b]]
		rec := ownerRecord{Owner: to.ID, Term: to.Term, Assigned: true}
		g.Go(func() error {
			var err error
			var obj store.Object[ownerRecord]
			if ok {
				rec.Moves = o.Value.Moves + 1
				obj, err = r.owners.Update(ctx, r.keys.owner(b), rec, o.Revision, guard)
			} else {
				obj, err = r.owners.Create(ctx, r.keys.owner(b), rec, guard)
			}
			if err == nil {
				mu.Lock()
				w.owners[obj.Key] = obj
				mu.Unlock()
			} else {
				select {
				case failed <- struct{}{}:
				default:
				}
			}
			return nil
		})
	}
	_ = g.Wait()
	select {
	case <-failed:
		next = min(next, r.retry())
	default:
	}
	return next
}
