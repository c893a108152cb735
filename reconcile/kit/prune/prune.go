package prune

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/converge-go/converge/internal/invalid"
	"github.com/converge-go/converge/internal/nilness"
	"github.com/converge-go/converge/internal/running"
	"github.com/converge-go/converge/store"
)

// Errors of the package. Test for them with errors.Is.
var (
	// ErrInvalid matches every error New returns for bad options; it
	// matches the ErrInvalid of every converge package.
	ErrInvalid error = invalid.New("prune")
	// ErrRefused matches a pass a gate refused (see Check): nothing was
	// deleted. The error matches its cause too.
	ErrRefused = errors.New("prune: pass refused")
	// ErrIdentityChanged: the store's identity changed during the pass.
	ErrIdentityChanged = errors.New("prune: store identity changed")
	// ErrEmpty: the desired set is empty and Options.AllowEmpty is false.
	ErrEmpty = errors.New("prune: empty desired set (set AllowEmpty if that is meant)")
	// ErrNotRunning is returned by Pruner.Prune when no Run is in progress.
	ErrNotRunning = errors.New("prune: not running")
	// ErrAlreadyRunning is returned by Run called while the pruner runs;
	// it matches the ErrAlreadyRunning of every converge package
	// (reconcile.ErrAlreadyRunning included).
	ErrAlreadyRunning error = running.New("prune")
)

// DefaultInterval is the time between two passes when Options.Interval is 0.
const DefaultInterval = 10 * time.Minute

// Controller is what a Pruner needs of the controller that makes the
// world's objects: *reconcile.Controller[T] is one.
type Controller interface {
	WaitForSync(ctx context.Context) error
	Ready() error
	Enqueue(key string) error
}

// Options configure a Pruner. Name, World and Delete are required.
type Options struct {
	// Name is the owner this operator writes in its marks (Mark.Owner),
	// and names the pruner in logs and in a manager.
	Name string
	// Prefix is the controller's Options.Prefix: the desired set is the
	// store's objects under it (one marked for deletion included: its
	// finalizer's cleanup is its controller's), and a world object whose
	// key is not under it is never deleted.
	Prefix string
	// Interval is the time between passes (0: DefaultInterval); negative
	// values are refused.
	Interval time.Duration
	// AllowEmpty lets a pass delete with an empty desired set. Without
	// it, an empty desired set refuses the pass (ErrEmpty).
	AllowEmpty bool
	// World lists the world's objects with their marks. It is called at
	// every pass before the desired set is read (see the package
	// documentation for why).
	World func(ctx context.Context) ([]WorldObject, error)
	// Delete deletes one object of the world. It must treat an object
	// already gone as deleted.
	Delete func(ctx context.Context, obj WorldObject) error
	// Logger receives a line per pass (default: discarded).
	Logger *slog.Logger
	// Marker, if set, is the Marker Mark uses and each pass tells the
	// identity it read: share one between the pruner and whatever marks
	// objects before the pruner exists. Its owner must be Name.
	Marker *Marker
}

func (o *Options) check() error {
	switch {
	case o.Name == "":
		return fmt.Errorf("%w: empty Name", ErrInvalid)
	case o.Interval < 0:
		return fmt.Errorf("%w: Interval %v < 0", ErrInvalid, o.Interval)
	case o.World == nil:
		return fmt.Errorf("%w: nil World", ErrInvalid)
	case o.Delete == nil:
		return fmt.Errorf("%w: nil Delete", ErrInvalid)
	}
	if err := store.ValidatePrefix(o.Prefix); err != nil {
		return fmt.Errorf("%w: Prefix: %w", ErrInvalid, err)
	}
	return nil
}

func (o *Options) fillDefaults() {
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Pruner deletes from the world what its operator made and no store object
// wants any longer, under the gates of Check and the selection of Select.
// Run it beside its controller (a reconcile/manager runnable: it is
// leader-only, and restartable); Prune asks the running pruner for a pass
// now. Its methods are safe for concurrent use.
type Pruner[T any] struct {
	c    Controller
	s    store.Store[T]
	id   store.Identifier
	opts Options
	mark *Marker // Mark's, told the identity each pass reads

	mu   sync.Mutex
	loop *loop // the current Run's, nil between runs
	last Pass
	ran  bool // last holds a pass
}

// New returns a Pruner of the world of the controller c, whose objects
// are those of s (the controller's store) under opts.Prefix. s must be a
// store.Identifier. Bad input returns an error matching ErrInvalid.
func New[T any](c Controller, s store.Store[T], opts Options) (*Pruner[T], error) {
	if nilness.Is(c) {
		return nil, fmt.Errorf("%w: nil controller", ErrInvalid)
	}
	if nilness.Is(s) {
		return nil, fmt.Errorf("%w: nil store", ErrInvalid)
	}
	id, ok := s.(store.Identifier)
	if !ok {
		return nil, fmt.Errorf("%w: the store %T has no identity (store.Identifier)", ErrInvalid, s)
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	opts.fillDefaults()
	opts.Logger = opts.Logger.With("pruner", opts.Name)
	mark := opts.Marker
	if mark == nil {
		var err error
		if mark, err = NewMarker(opts.Name, id); err != nil {
			return nil, err
		}
	} else if mark.owner != opts.Name {
		return nil, fmt.Errorf("%w: Marker of owner %q, Name %q", ErrInvalid, mark.owner, opts.Name)
	}
	return &Pruner[T]{c: c, s: s, id: id, opts: opts, mark: mark}, nil
}

// Name returns Options.Name.
func (p *Pruner[T]) Name() string { return p.opts.Name }

// NeedsLeaderElection reports true: a pruner acts on the world, so under a
// manager with an elector it runs only in the leader.
func (p *Pruner[T]) NeedsLeaderElection() bool { return true }

// Mark returns the mark the operator must store beside each object it
// creates in the world: Options.Name and the store's identity, read once
// per identity (see Marker): at the first call, and again once a pass
// has read another. It fails as store.Identifier.Identity does.
func (p *Pruner[T]) Mark(ctx context.Context) (Mark, error) { return p.mark.Mark(ctx) }

// Last returns the latest pass, and false if none has run.
func (p *Pruner[T]) Last() (Pass, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last, p.ran
}
