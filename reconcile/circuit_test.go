package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// postgres simulates an external system: while it is down its check and
// every reconcile that acts on it fail with errRefused.
type postgres struct{ down atomic.Bool }

var errRefused = errors.New("dial tcp 127.0.0.1:5432: connection refused")

func (p *postgres) check(context.Context) error {
	if p.down.Load() {
		return errRefused
	}
	return nil
}

// depInterval is the check interval of these tests.
const depInterval = time.Second

// dependent returns a controller over s whose one dependency is pg,
// checked every depInterval, reconciling with rec.
func dependent(t *testing.T, s store.Store[*item], pg *postgres, rec Reconciler[*item], opts Options[*item]) *Controller[*item] {
	t.Helper()
	opts.Name = "roles"
	opts.Dependencies = []*dependency.Dependency{{Name: "postgres", Check: pg.check, Interval: depInterval}}
	c, err := New(s, rec, opts)
	require.NoError(t, err)
	return c
}

// takeDown takes pg down and waits, on the fake clock, until c reports it
// down, failing past FailureThreshold intervals (checks that fail at
// once).
func takeDown(t *testing.T, c *Controller[*item], pg *postgres) {
	t.Helper()
	pg.down.Store(true)
	broke := time.Now()
	for synctest.Wait(); c.Ready() == nil; synctest.Wait() {
		require.Less(t, time.Since(broke), dependency.DefaultFailureThreshold*depInterval, "not down within the documented bound")
		advance(depInterval / 10)
	}
}

// A dependency whose checks fail is down within FailureThreshold ×
// Interval: Health shows it down, since when and with its last error;
// Ready fails with an error matching dependency.ErrDown that names it and
// says why; Healthy stays nil however long the outage lasts (a restart
// would not bring the dependency back). One successful check brings it
// back up, and the controller ready.
func TestADependencyDownIsInHealthAndReadyButNeverInHealthy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pg := &postgres{}
		s := store.NewMemory[*item]()
		put(t, s, "roles/app", &item{Want: 1})
		c := dependent(t, s, pg, &recorder{}, Options[*item]{})
		defer start(t, c)()
		synctest.Wait()
		require.NoError(t, c.Ready())
		require.Len(t, c.Health().Dependencies, 1)
		require.False(t, c.Health().Dependencies[0].Down)

		advance(depInterval / 2)
		broke := time.Now()
		takeDown(t, c, pg)
		err := c.Ready()
		require.ErrorIs(t, err, dependency.ErrDown)
		require.ErrorContains(t, err, "postgres")
		require.ErrorContains(t, err, errRefused.Error(), "Ready says why")
		d := c.Health().Dependencies[0]
		require.True(t, d.Down)
		require.Equal(t, "postgres", d.Name)
		require.Equal(t, errRefused.Error(), d.LastError)
		require.False(t, d.Since.Before(broke), "down since before it broke")
		require.False(t, d.Since.After(time.Now()))
		require.Equal(t, dependency.DefaultFailureThreshold, d.Failures)
		for range 120 {
			require.NoError(t, c.Healthy(), "a dependency down is not unhealthy")
			advance(10 * time.Minute)
		}

		pg.down.Store(false)
		back := time.Now()
		advance(depInterval)
		synctest.Wait()
		require.NoError(t, c.Ready(), "unready one interval after the dependency came back")
		d = c.Health().Dependencies[0]
		require.False(t, d.Down)
		require.False(t, d.Since.Before(back))
		require.Equal(t, errRefused.Error(), d.LastError, "the last error is kept")
	})
}

// While a dependency is down no key is handed to the reconciler, however
// many changes, enqueues and due retries arrive: they wait in the queue.
// A reconcile in flight when it goes down finishes.
func TestNoReconcileRunsWhileADependencyIsDownAndKeysKeepArriving(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pg := &postgres{}
		s := store.NewMemory[*item]()
		put(t, s, "roles/slow", &item{})
		release := make(chan struct{})
		var calls atomic.Int64
		rec := &recorder{fn: func(_ context.Context, req Request[*item]) (Result, error) {
			calls.Add(1)
			if req.Key == "roles/slow" && req.Object.Value.Want == 0 {
				<-release // in flight across the outage's start
			}
			return Result{RequeueAfter: 3 * depInterval}, nil
		}}
		c := dependent(t, s, pg, rec, Options[*item]{Workers: 4})
		defer start(t, c)()
		synctest.Wait()
		require.Equal(t, int64(1), calls.Load())

		takeDown(t, c, pg)
		close(release)
		synctest.Wait()
		ks := snapshotOf(c, "roles/slow")
		require.Equal(t, RequeueAfter, ks.LastOutcome, "the reconcile in flight did not finish")
		held := calls.Load()
		for i := range 30 {
			put(t, s, fmt.Sprintf("roles/r%d", i), &item{Want: i})
			put(t, s, "roles/slow", &item{Want: i + 1})
			require.NoError(t, c.Enqueue("roles/other"))
			advance(depInterval)
			require.Equal(t, held, calls.Load(), "a reconcile ran while the dependency was down")
		}
		waiting := 0
		for _, k := range c.Snapshot() {
			if k.State == queue.Waiting {
				waiting++
			}
		}
		require.Equal(t, 32, waiting, "every key woken waits in the queue")

		pg.down.Store(false)
		advance(depInterval)
		synctest.Wait()
		require.Equal(t, held+32, calls.Load(), "the held keys were not reconciled once it was up")
	})
}

// When a dependency comes back up, every key that failed or waited while
// it was down is reconciled at once (within one check interval), its
// retries reset, instead of after a backoff that grew during the outage.
func TestAfterRecoveryEveryHeldKeyIsReconciledAtOnceWithItsRetriesReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pg := &postgres{}
		s := store.NewMemory[*item]()
		var mu sync.Mutex
		seen := map[string][]Request[*item]{} // the reconciles since recovery
		var recovered atomic.Bool
		rec := &recorder{fn: func(_ context.Context, req Request[*item]) (Result, error) {
			if recovered.Load() {
				mu.Lock()
				seen[req.Key] = append(seen[req.Key], req)
				mu.Unlock()
			}
			if pg.down.Load() {
				return Result{}, fmt.Errorf("create role: %w", errRefused)
			}
			return Result{}, nil
		}}
		c := dependent(t, s, pg, rec, Options[*item]{Workers: 2,
			RateLimiter: queue.NewExponential[string](100*time.Millisecond, time.Hour, 0)})
		defer start(t, c)()
		keys := []string{"roles/a", "roles/b", "roles/c"}
		pg.down.Store(true)
		for _, k := range keys {
			put(t, s, k, &item{Want: 1})
		}
		takeDown(t, c, pg) // the keys fail, and back off, until it is found down
		for _, k := range keys {
			ks := snapshotOf(c, k)
			require.Positive(t, ks.Retries, "%s did not back off before the dependency was down", k)
		}
		advance(2 * time.Hour)
		for _, k := range []string{"roles/d", "roles/e"} {
			put(t, s, k, &item{Want: 1})
			keys = append(keys, k)
		}

		recovered.Store(true)
		pg.down.Store(false)
		back := time.Now()
		advance(depInterval)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys {
			require.NotEmpty(t, seen[k], "%s not reconciled within one interval of recovery", k)
			require.Zero(t, seen[k][0].Retries, "%s kept its backoff through the outage", k)
			ks := snapshotOf(c, k)
			require.Equal(t, Success, ks.LastOutcome)
			require.False(t, ks.LastAt.Before(back))
		}
	})
}

// A reconcile that returns an error marked with dependency.Down takes the
// dependency down at once, before its next check: no other key is
// reconciled until a check succeeds, and then they all are, the blamed
// key first among them retried for "dependency-up".
func TestAReconcileErrorMarkingADependencyOpensTheCircuitBeforeTheNextCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pg := &postgres{} // its check always succeeds: only the reconcile sees it fail
		s := store.NewMemory[*item]()
		var blamed atomic.Bool
		rec := &recorder{fn: func(_ context.Context, req Request[*item]) (Result, error) {
			if req.Key == "roles/a" && blamed.CompareAndSwap(false, true) {
				return Result{}, dependency.Down("postgres", errRefused)
			}
			return Result{}, nil
		}}
		c := dependent(t, s, pg, rec, Options[*item]{Workers: 2})
		defer start(t, c)()
		synctest.Wait()
		put(t, s, "roles/a", &item{Want: 1})
		synctest.Wait()
		require.True(t, blamed.Load())
		d := c.Health().Dependencies[0]
		require.True(t, d.Down, "not down at once")
		require.Equal(t, errRefused.Error(), d.LastError)
		require.ErrorIs(t, c.Ready(), dependency.ErrDown)
		ks := snapshotOf(c, "roles/a")
		require.Equal(t, DependencyDown, ks.LastOutcome)
		require.Zero(t, ks.Retries, "a key held for its dependency counts no retry")

		for i := range 5 {
			put(t, s, fmt.Sprintf("roles/b%d", i), &item{})
		}
		synctest.Wait()
		require.Equal(t, 1, rec.count("roles/a"))
		require.Zero(t, rec.count("roles/b0"), "a key was reconciled before the next check")

		advance(depInterval)
		synctest.Wait()
		require.NoError(t, c.Ready())
		require.Equal(t, 2, rec.count("roles/a"))
		for i := range 5 {
			require.Equal(t, 1, rec.count(fmt.Sprintf("roles/b%d", i)))
		}
		ks = snapshotOf(c, "roles/a")
		require.Equal(t, Success, ks.LastOutcome)
		require.Contains(t, ks.LastTriggers, "dependency-up")
	})
}

// An error marked with the name of no dependency of the controller is a
// Failure like any other: it backs off and holds nothing.
func TestAnErrorMarkingAnUnknownDependencyIsAnOrdinaryFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		rec := &recorder{fn: func(context.Context, Request[*item]) (Result, error) {
			return Result{}, dependency.Down("mysql", errRefused)
		}}
		for _, pg := range []*postgres{nil, {}} {
			var c *Controller[*item]
			if pg == nil {
				var err error
				c, err = New(s, rec, Options[*item]{Name: "plain"})
				require.NoError(t, err)
			} else {
				c = dependent(t, s, pg, rec, Options[*item]{})
			}
			stop := start(t, c)
			put(t, s, "roles/a", &item{})
			synctest.Wait()
			ks := snapshotOf(c, "roles/a")
			require.Equal(t, Failure, ks.LastOutcome)
			require.Equal(t, queue.Delayed, ks.State, "no backoff")
			require.NoError(t, c.Ready())
			stop()
		}
	})
}

// A batch controller holds its batches as a plain one holds its keys: a
// batch result marked with dependency.Down takes the dependency down, and
// no batch is reconciled until it is up.
func TestABatchControllerHoldsItsKeysWhileADependencyIsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pg := &postgres{}
		s := store.NewMemory[*item]()
		var calls atomic.Int64
		rec := &batchFunc{fn: func(_ context.Context, reqs []Request[*item]) []BatchResult {
			calls.Add(1)
			out := make([]BatchResult, len(reqs))
			for i := range out {
				if pg.down.Load() {
					out[i].Err = dependency.Down("postgres", errRefused)
				}
			}
			return out
		}}
		c := dependent(t, s, pg, rec, Options[*item]{BatchSize: 4})
		defer start(t, c)()
		synctest.Wait()
		pg.down.Store(true)
		put(t, s, "roles/a", &item{})
		synctest.Wait()
		require.ErrorIs(t, c.Ready(), dependency.ErrDown)
		held := calls.Load()
		for i := range 10 {
			put(t, s, fmt.Sprintf("roles/b%d", i), &item{})
			advance(depInterval)
		}
		require.Equal(t, held, calls.Load(), "a batch ran while the dependency was down")
		pg.down.Store(false)
		advance(depInterval)
		synctest.Wait()
		require.NoError(t, c.Ready())
		for _, k := range c.Snapshot() {
			require.Equal(t, Success, k.LastOutcome, k.Key)
		}
	})
}

// batchFunc is a BatchReconciler of a function.
type batchFunc struct {
	fn func(ctx context.Context, reqs []Request[*item]) []BatchResult
}

func (b *batchFunc) Reconcile(ctx context.Context, req Request[*item]) (Result, error) {
	r := b.fn(ctx, []Request[*item]{req})
	return r[0].Result, r[0].Err
}

func (b *batchFunc) ReconcileBatch(ctx context.Context, reqs []Request[*item]) []BatchResult {
	return b.fn(ctx, reqs)
}

// Bad dependencies make New fail with ErrInvalid.
func TestBadDependenciesAreRefusedWithErrInvalid(t *testing.T) {
	ok := func(context.Context) error { return nil }
	for _, deps := range [][]*dependency.Dependency{
		{{Name: "pg"}},
		{{Check: ok}},
		{{Name: "pg", Check: ok}, {Name: "pg", Check: ok}},
		{{Name: "pg", Check: ok, Interval: -time.Second}},
	} {
		_, err := New(store.NewMemory[*item](), &recorder{}, Options[*item]{Name: "x", Dependencies: deps})
		require.ErrorIs(t, err, ErrInvalid)
	}
}
