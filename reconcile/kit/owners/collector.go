package owners

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/converge-go/converge/internal/nilness"
	"github.com/converge-go/converge/internal/running"
	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// DefaultName is the name of a Collector whose options give none.
const DefaultName = "owners"

// ErrAlreadyRunning is returned by Collector.Run called while the
// collector runs. It matches the ErrAlreadyRunning of every converge
// package, reconcile.ErrAlreadyRunning included, under errors.Is.
var ErrAlreadyRunning error = running.New("owners")

// CollectorOptions configure a Collector. The zero value collects every
// key of the store with one worker.
type CollectorOptions struct {
	// Name identifies the collector in logs, metrics and health (default
	// DefaultName).
	Name string
	// Prefix limits the keys collected ("" for all): the children, and
	// the owners whose deletion the collector carries out. An owner named
	// by a child but outside Prefix counts as present, since the collector
	// cannot see it: give children and their owners one prefix.
	Prefix string
	// Workers is how many keys are handled at once (default 1).
	Workers int
	// RateLimiter computes the backoff of a key whose handling failed
	// (default queue.DefaultRateLimiter).
	RateLimiter queue.RateLimiter[string]
	// HeartbeatInterval is how often the collector checks that its store
	// still serves its watch (see reconcile.Options.HeartbeatInterval).
	HeartbeatInterval time.Duration
	// Logger receives the collector's logs (default: discarded).
	Logger *slog.Logger
	// Metrics receives the outcome of every key handled (default: none).
	Metrics reconcile.Metrics
}

// Collector is the garbage collector of owner references, a runnable for
// reconcile/manager: it deletes the children of owners that are gone, and
// carries out the foreground and orphan deletions of owners (see the
// package doc for what each does).
//
// It is a reconcile.Controller over the store, which handles each key as a
// child (is every owner it names gone?) and as an owner (what does its
// deletion wait for?), so it has a controller's cache, resume after a
// broken watch, per-key backoff, health and leader gating. Every write it
// makes is a compare-and-swap through the API-server layer against the
// revision it read, fenced by the term of leadership it runs in; a write
// that conflicts is made again on the newer object.
//
// The zero Collector and a nil *Collector fail every call with an error
// matching store.ErrInvalid.
type Collector[T any] struct {
	ctrl    *reconcile.Controller[T]
	kind    apistore.Kind[T]
	prefix  string
	graph   graph
	running atomic.Bool
}

// NewCollector returns a collector of the objects of s, whose metadata kind
// reads. s must apply the API-server layer to its writes: an
// *apistore.Store, or a client of a store served with the layer (it must
// implement apistore.PropagatingDeleter). A nil s or kind, a store without
// the layer, and options out of range fail with an error matching
// store.ErrInvalid.
func NewCollector[T any](s store.Store[T], kind apistore.Kind[T], opts CollectorOptions) (*Collector[T], error) {
	switch {
	case nilness.Is(s):
		return nil, fmt.Errorf("%w: owners: nil store", store.ErrInvalid)
	case nilness.Is(kind):
		return nil, fmt.Errorf("%w: owners: nil kind", store.ErrInvalid)
	}
	if _, ok := s.(apistore.PropagatingDeleter); !ok {
		return nil, fmt.Errorf("%w: owners: the store %T does not apply the API-server layer (no DeleteWith)", store.ErrInvalid, s)
	}
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	c := &Collector[T]{kind: kind, prefix: opts.Prefix}
	c.graph.cached = c.cachedRevision
	ctrl, err := reconcile.New(s, reconcile.ReconcilerFunc[T](c.reconcile), reconcile.Options[T]{
		Name:              opts.Name,
		Prefix:            opts.Prefix,
		Workers:           opts.Workers,
		RateLimiter:       opts.RateLimiter,
		HeartbeatInterval: opts.HeartbeatInterval,
		Logger:            opts.Logger,
		Metrics:           opts.Metrics,
		Indexes:           map[string]func(store.Object[T]) []string{ownersIndex: c.ownerKeys},
	})
	if err != nil {
		return nil, fmt.Errorf("owners: %w", err)
	}
	c.ctrl = ctrl
	return c, nil
}

// check refuses a Collector not made by NewCollector.
func (c *Collector[T]) check() error {
	if c == nil || c.ctrl == nil {
		return fmt.Errorf("%w: owners: Collector not made by NewCollector", store.ErrInvalid)
	}
	return nil
}

// Run collects until ctx ends, then returns nil, leaving no goroutine
// behind. It acts only once its cache holds the store's whole list, and
// never while it cannot follow the store (see Ready). It may be called
// again after it returns (a new term of leadership): the new run lists the
// store again and looks at every key. A call while it runs returns
// ErrAlreadyRunning.
func (c *Collector[T]) Run(ctx context.Context) error {
	if err := c.check(); err != nil {
		return err
	}
	if !c.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	defer c.running.Store(false)
	c.graph.reset()
	return c.ctrl.Run(ctx)
}

// Name returns the collector's name ("" for a Collector not made by
// NewCollector).
func (c *Collector[T]) Name() string {
	if c.check() != nil {
		return ""
	}
	return c.ctrl.Name()
}

// NeedsLeaderElection reports true: the collector deletes, so only the
// leader of a manager with an elector runs it.
func (c *Collector[T]) NeedsLeaderElection() bool { return true }

// Ready returns nil while the collector follows its store: an error
// matching reconcile.ErrNotSynced until its cache holds the store's list,
// and one matching reconcile.ErrDegraded while the store is unreachable.
// The collector deletes nothing while Ready fails.
func (c *Collector[T]) Ready() error {
	if err := c.check(); err != nil {
		return err
	}
	return c.ctrl.Ready()
}

// Healthy returns an error matching reconcile.ErrStuck while the handling
// of a key has run too long (see reconcile.Controller.Healthy).
func (c *Collector[T]) Healthy() error {
	if err := c.check(); err != nil {
		return err
	}
	return c.ctrl.Healthy()
}

// Health reports the collector's state as a controller's (see
// reconcile.Health): Deleting lists the objects marked for deletion it
// has seen, and a key that stays there waits for a cleanup of its own, or
// for children that do not go.
func (c *Collector[T]) Health() reconcile.Health {
	if c.check() != nil {
		return reconcile.Health{}
	}
	return c.ctrl.Health()
}

// WaitForSync blocks until the collector's cache holds the store's list,
// or ctx ends.
func (c *Collector[T]) WaitForSync(ctx context.Context) error {
	if err := c.check(); err != nil {
		return err
	}
	return c.ctrl.WaitForSync(ctx)
}

// inView reports whether key is one the collector handles.
func (c *Collector[T]) inView(key string) bool {
	return strings.HasPrefix(key, c.prefix) && store.ValidateKey(key) == nil
}

// wake asks for the keys of the view among keys to be handled again.
func (c *Collector[T]) wake(keys ...string) {
	for _, key := range keys {
		if c.inView(key) {
			_ = c.ctrl.Enqueue(key) // in view: never refused
		}
	}
}
