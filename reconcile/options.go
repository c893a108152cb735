package reconcile

import (
	"cmp"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/converge-go/converge/internal/invalid"
	"github.com/converge-go/converge/internal/nilness"
	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/reconcile/tracing"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/checkpoint"
)

// ErrInvalid matches every error New returns for bad options, and bad input
// elsewhere in the package. errors.Is matches it with the ErrInvalid of
// every converge package (store.ErrInvalid included).
var ErrInvalid error = invalid.New("reconcile")

// Predicate decides whether a change of a primary object wakes its key:
// old is nil for a new object, cur nil for a deleted one. Every predicate
// must agree for the key to be queued. The cache is updated either way, and
// resyncs and other sources are not filtered.
type Predicate[T any] func(old, cur *store.Object[T]) bool

// Options configure a Controller. Name is required; every other field has a
// working zero value.
type Options[T any] struct {
	// Name identifies the controller in logs, metrics and health.
	Name string
	// Prefix limits the primary store's keys this controller watches ("" for all).
	Prefix string
	// Workers is how many keys are reconciled at once (default 1). It can be
	// changed while running with SetWorkers.
	Workers int
	// BatchSize, above 1, hands each worker up to this many ready keys at
	// once, for a reconciler that implements BatchReconciler: one
	// ReconcileBatch call converges them all (default 1: one Reconcile per
	// key). New refuses a BatchSize above 1 for a reconciler that does not
	// implement BatchReconciler.
	BatchSize int
	// RateLimiter computes the backoff of failing keys (default
	// queue.DefaultRateLimiter).
	RateLimiter queue.RateLimiter[string]
	// Timeout bounds each Reconcile call through its context (0: none).
	Timeout time.Duration
	// ResyncPeriod, if positive, reconciles every cached key again about
	// this often (with ±10% jitter), at low priority.
	ResyncPeriod time.Duration
	// StuckAfter marks the controller unhealthy while a reconcile has run
	// longer than this (default 10 minutes).
	StuckAfter time.Duration
	// StaleAfter is the stale-status alarm: a key whose change has not
	// converged (no successful reconcile covered it), or that has kept
	// failing (a terminal failure included: it waits for a change), for
	// longer than this is listed in Health.Stale and marked in Snapshot
	// (default 15 minutes). Stale keys do not make the controller
	// unhealthy: restarting would not help them.
	StaleAfter time.Duration
	// HeartbeatInterval is how often the controller checks that its store
	// still serves its watch (default 2 seconds): it asks a quiet watch for
	// a progress report (or, for a store whose watch cannot report
	// progress, reads the store's revision). A store that stops answering,
	// even one that keeps its watch open and silent, is reported degraded
	// in Health within two intervals.
	HeartbeatInterval time.Duration
	// GracePeriod is how long Run waits for in-flight reconciles after its
	// context ends before cancelling theirs (default 30 seconds).
	GracePeriod time.Duration
	// Logger receives the controller's logs (default: discarded).
	Logger *slog.Logger
	// Metrics receives reconcile outcomes and durations (default: none).
	Metrics Metrics
	// QueueMetrics receives the workqueue's metrics (default: none).
	QueueMetrics queue.Metrics
	// Tracer traces each reconcile, its writes through Request.Store and
	// the external calls it marks (tracing.StartCall), linking each reconcile to
	// the writes that caused it (store.WithCause); see
	// reconcile/observe/convergeotel. Nil (the default) traces nothing, at
	// no cost per reconcile.
	Tracer tracing.Tracer
	// Predicates filter changes of primary objects.
	Predicates []Predicate[T]
	// Indexes are named index functions over the cache, for
	// Lister.ByIndex: each returns an object's values for its index (the
	// owner of a pod, say); an object may have several, or none.
	Indexes map[string]func(obj store.Object[T]) []string
	// Sources wake keys besides the primary store's changes.
	Sources []Source
	// WithoutLeaderElection lets the controller run in every replica of a
	// Manager that has an elector (for controllers that only observe);
	// by default a controller runs only in the leader.
	WithoutLeaderElection bool
	// Dependencies are the external systems the reconciles act on (the
	// database an operator manages), checked while the controller runs
	// (see reconcile/dependency for their intervals, thresholds and
	// bounds). While one is down, Health says so, Ready fails with an
	// error matching dependency.ErrDown, and the controller hands no key
	// to the reconciler: keys wait in the queue, and the reconciles in
	// flight finish. A reconcile that returns an error marked with
	// dependency.Down takes the dependency down at once. When every
	// dependency is up again, each key whose latest reconcile failed is
	// retried at once, its backoff forgotten. Every dependency is one of
	// every key: they hold the whole controller.
	//
	// Give every controller of the process the same *dependency.Dependency
	// for one external system: they share its state (down for one is down
	// for all, at the same instant, however it was found) and its checks
	// (one per Interval while any of them runs). manager.Manager refuses
	// two different ones of one name.
	Dependencies []*dependency.Dependency
	// Checkpoint, if its Store is set, keeps the controller's desired
	// state (its cache and the revision it reflects) in a local file,
	// written in the background, so that a controller started while its
	// store cannot be listed (within Checkpoint.StartAfter) reconciles
	// toward it: Health.Checkpoint then says so, with its revision and age,
	// and keys the checkpoint lacks wait for the store (AwaitingStore)
	// instead of being reconciled as deleted. A checkpoint damaged, older
	// than Checkpoint.MaxAge, or of another prefix or store is refused:
	// the controller waits for its store and says why (see
	// store/checkpoint for what it costs).
	Checkpoint checkpoint.Options[T]
	// Shard, if set, splits the keys among replicas: this controller
	// reconciles only the keys the Sharder says it owns, each reconcile's
	// writes carry the ownership's guards, and a reconcile is cancelled
	// when its key's ownership is lost (see Sharder; reconcile/shard).
	Shard Sharder
}

const (
	defaultStuckAfter  = 10 * time.Minute
	defaultStaleAfter  = 15 * time.Minute
	defaultGracePeriod = 30 * time.Second
	defaultHeartbeat   = 2 * time.Second
)

// check refuses options out of range, with an error matching ErrInvalid.
func (o *Options[T]) check() error {
	switch {
	case o.Name == "":
		return fmt.Errorf("%w: Name is required", ErrInvalid)
	case o.Workers < 0:
		return fmt.Errorf("%w: Workers is negative (%d)", ErrInvalid, o.Workers)
	case o.BatchSize < 0:
		return fmt.Errorf("%w: BatchSize is negative (%d)", ErrInvalid, o.BatchSize)
	case o.Timeout < 0, o.ResyncPeriod < 0, o.StuckAfter < 0, o.StaleAfter < 0, o.GracePeriod < 0, o.HeartbeatInterval < 0:
		return fmt.Errorf("%w: durations must not be negative", ErrInvalid)
	}
	if o.Prefix != "" {
		if err := store.ValidatePrefix(o.Prefix); err != nil {
			return fmt.Errorf("%w: Prefix: %w", ErrInvalid, err)
		}
	}
	if err := o.Checkpoint.Check(); err != nil {
		return fmt.Errorf("%w: Checkpoint: %w", ErrInvalid, err)
	}
	if o.Shard != nil && o.Shard.RecordPrefix() != "" && strings.HasPrefix(o.Shard.RecordPrefix(), o.Prefix) {
		// The cache would hold the sharder's records as objects: their
		// values do not decode as T, and the controller never syncs.
		return fmt.Errorf("%w: Prefix %q covers the Shard's own records under %q; give the controller its objects' prefix", ErrInvalid, o.Prefix, o.Shard.RecordPrefix())
	}
	for i, p := range o.Predicates {
		if p == nil {
			return fmt.Errorf("%w: Predicates[%d] is nil", ErrInvalid, i)
		}
	}
	for name, fn := range o.Indexes {
		if fn == nil {
			return fmt.Errorf("%w: index %q has a nil function", ErrInvalid, name)
		}
	}
	for i, s := range o.Sources {
		if s == nil {
			return fmt.Errorf("%w: Sources[%d] is nil", ErrInvalid, i)
		}
	}
	return nil
}

// fillDefaults gives every zero field its default.
func (o *Options[T]) fillDefaults() {
	if o.Workers == 0 {
		o.Workers = 1
	}
	if o.BatchSize == 0 {
		o.BatchSize = 1
	}
	if o.RateLimiter == nil {
		o.RateLimiter = queue.DefaultRateLimiter[string]()
	}
	if o.StuckAfter == 0 {
		o.StuckAfter = defaultStuckAfter
	}
	if o.StaleAfter == 0 {
		o.StaleAfter = defaultStaleAfter
	}
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = defaultHeartbeat
	}
	if o.GracePeriod == 0 {
		o.GracePeriod = defaultGracePeriod
	}
	if nilness.Is(o.Tracer) {
		o.Tracer = nil // a typed nil is none
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if cp := &o.Checkpoint; nilness.Is(cp.Store) {
		cp.Store = nil // a typed nil is none
	} else {
		cp.StartAfter = cmp.Or(cp.StartAfter, checkpointStartHeartbeats*o.HeartbeatInterval)
		cp.MaxAge = cmp.Or(cp.MaxAge, checkpoint.DefaultMaxAge)
		cp.Interval = cmp.Or(cp.Interval, checkpoint.DefaultInterval)
	}
}

// checkpointStartHeartbeats is Checkpoint.StartAfter by default, in
// heartbeats: a store silent that long is detected unreachable (two
// heartbeats) and has had a retry.
const checkpointStartHeartbeats = 3
