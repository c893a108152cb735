package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
	"github.com/stretchr/testify/require"
)

// When the watch breaks, the cache resumes from the last revision it saw:
// every change made meanwhile is reconciled once, nothing else is.
func TestBrokenWatchResumesWithoutLossOrDuplicates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := store.NewMemory[*item]()
		s := faulty(t, mem)
		for i := range 10 {
			put(t, s, fmt.Sprint("k", i), &item{Want: i})
		}
		rec := &recorder{}
		c, err := New[*item](s, rec, Options[*item]{Name: "test"})
		require.NoError(t, err)
		stop := start(t, c)
		synctest.Wait()
		rec.reset()
		s.BreakWatches()
		put(t, mem, "k1", &item{Want: 100})
		put(t, mem, "k2", &item{Want: 200})
		rev := del(t, mem, "k3")
		require.NoError(t, c.WaitForRevision(context.Background(), rev))
		synctest.Wait()
		require.Equal(t, 1, rec.count("k1"))
		require.Equal(t, 1, rec.count("k2"))
		require.Equal(t, 1, rec.count("k3"))
		rec.mu.Lock()
		require.Len(t, rec.requests, 3, "keys that did not change were reconciled")
		rec.mu.Unlock()
		stop()
	})
}

// When the history the watch needs is compacted, the cache re-lists and
// wakes exactly the keys that changed or vanished meanwhile: no lost change,
// no storm of reconciles of unchanged keys.
func TestCompactedWatchRelistsExactlyTheChangedKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := store.NewMemory[*item](store.WithHistory(5))
		s := faulty(t, mem)
		for i := range 20 {
			put(t, s, fmt.Sprint("k", i), &item{Want: i})
		}
		rec := &recorder{}
		c, err := New[*item](s, rec, Options[*item]{Name: "test"})
		require.NoError(t, err)
		stop := start(t, c)
		synctest.Wait()
		rec.reset()
		s.SetOutage(faultstore.Loud)
		put(t, mem, "k1", &item{Want: 100})
		del(t, mem, "k2")
		put(t, mem, "new", &item{Want: 7})
		for range 10 { // churn beyond the retained history
			rewrite(t, mem, "k5")
		}
		put(t, mem, "k6", &item{Want: 66})
		rev, _ := mem.Revision(context.Background())
		require.NoError(t, mem.Compact(context.Background(), rev))
		synctest.Wait()
		require.NotEmpty(t, c.Health().Degraded)
		s.SetOutage(faultstore.Up)
		require.NoError(t, c.WaitForRevision(context.Background(), rev))
		synctest.Wait()
		rec.mu.Lock()
		got := map[string]int{}
		for _, r := range rec.requests {
			got[r.Key]++
		}
		rec.mu.Unlock()
		// k5 was rewritten with the same value but a new revision: it
		// changed, as far as revisions tell.
		require.Equal(t, map[string]int{"k1": 1, "k2": 1, "new": 1, "k5": 1, "k6": 1}, got)
		req, _ := rec.last("k2")
		require.True(t, req.Deleted)
		require.Equal(t, 2, req.Object.Value.Want, "the deletion carries the last value")
		require.Empty(t, c.Health().Degraded)
		stop()
	})
}

// The seed's hard limit, removed: with the store gone, the controller keeps
// its cache and keeps reconciling the world toward the last desired state
// it saw; status writes back off; health says degraded; when the store
// returns it catches up, and no desired state is lost or invented.
func TestKeepsHealingWhileStoreIsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := store.NewMemory[*item]()
		s := faulty(t, mem)
		put(t, s, "web", &item{Want: 3})
		world := &fakeWorld{running: map[string]int{}}
		events := make(chan string, 10)
		var statusErrs int
		var mu sync.Mutex
		var outage sync.Once
		rec := ReconcilerFunc[*item](func(ctx context.Context, req Request[*item]) (Result, error) {
			if req.Deleted {
				world.set(req.Key, 0)
				return Result{}, nil
			}
			world.set(req.Key, req.Object.Value.Want) // act on the world
			if req.Key == "db" {
				// The store goes away between acting and writing status.
				outage.Do(func() { s.SetOutage(faultstore.Loud) })
			}
			if req.Object.Value.Seen == req.Object.Value.Want {
				return Result{}, nil
			}
			next := *req.Object.Value
			next.Seen = next.Want
			_, err := s.Update(ctx, req.Key, &next, req.Object.Revision)
			if err != nil {
				mu.Lock()
				statusErrs++
				mu.Unlock()
			}
			return Result{}, err
		})
		c, err := New[*item](s, rec, Options[*item]{Name: "test", Sources: []Source{FromChannel(events)},
			RateLimiter: queue.NewExponential[string](100*time.Millisecond, 2*time.Second, 0)})
		require.NoError(t, err)
		stop := start(t, c)
		rev, _ := mem.Revision(context.Background())
		require.NoError(t, c.WaitForRevision(context.Background(), rev))
		require.Equal(t, 3, world.get("web"))

		put(t, s, "db", &item{Want: 2})
		advance(time.Second)
		require.Equal(t, 2, world.get("db"), "the world was changed")
		mu.Lock()
		require.GreaterOrEqual(t, statusErrs, 3, "the failed status write was not retried with backoff")
		mu.Unlock()

		world.set("web", 1) // a power failure takes two replicas away
		events <- "web"     // the world reports it
		advance(time.Second)
		require.Equal(t, 3, world.get("web"), "the loop stopped healing without its store")
		h := c.Health()
		require.NotEmpty(t, h.Degraded)
		require.NoError(t, c.Healthy(), "degraded is not dead")

		// The desired state changes while the controller cannot see it.
		put(t, mem, "web", &item{Want: 5, Seen: 3})
		world.set("web", 0)
		events <- "web"
		advance(time.Second)
		require.Equal(t, 3, world.get("web"), "the last desired state seen is what the loop heals toward")

		s.SetOutage(faultstore.Up)
		rev, _ = mem.Revision(context.Background())
		require.NoError(t, c.WaitForRevision(context.Background(), rev))
		advance(5 * time.Second)
		require.Equal(t, 5, world.get("web"))
		obj, err := mem.Get(context.Background(), "web")
		require.NoError(t, err)
		require.Equal(t, 5, obj.Value.Seen, "status caught up")
		obj, err = mem.Get(context.Background(), "db")
		require.NoError(t, err)
		require.Equal(t, 2, obj.Value.Seen, "the status write that failed during the outage landed")
		require.Empty(t, c.Health().Degraded)
		stop()
	})
}

type fakeWorld struct {
	mu      sync.Mutex
	running map[string]int
}

func (w *fakeWorld) set(k string, n int) { w.mu.Lock(); w.running[k] = n; w.mu.Unlock() }
func (w *fakeWorld) get(k string) int    { w.mu.Lock(); defer w.mu.Unlock(); return w.running[k] }

// A status write against the reconciled revision that loses to a spec
// change conflicts; the key is reconciled again against the new spec and
// the conflict is counted as a conflict, not an error.
func TestStatusConflictReconcilesNewerObject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "a", &item{Want: 1})
		m := &countingMetrics{}
		var once sync.Once
		var c *Controller[*item]
		rec := ReconcilerFunc[*item](func(ctx context.Context, req Request[*item]) (Result, error) {
			once.Do(func() { put(t, s, "a", &item{Want: 2}) }) // a spec write sneaks in
			if req.Object.Value.Seen == req.Object.Value.Want {
				return Result{}, nil
			}
			next := *req.Object.Value
			next.Seen = next.Want
			_, err := s.Update(ctx, req.Key, &next, req.Object.Revision)
			return Result{}, err
		})
		c, err := New(s, rec, Options[*item]{Name: "test", Metrics: m})
		require.NoError(t, err)
		stop := start(t, c)
		synctest.Wait()
		rev, _ := s.Revision(context.Background())
		require.NoError(t, c.WaitForRevision(context.Background(), rev))
		obj, _ := s.Get(context.Background(), "a")
		require.Equal(t, 2, obj.Value.Want, "the spec write was lost")
		require.Equal(t, 2, obj.Value.Seen)
		require.Equal(t, 1, m.get("total/conflict"))
		require.Zero(t, m.get("errors"))
		stop()
	})
}

// Run stops intake, lets in-flight reconciles finish within the grace
// period, cancels them after it, and leaves no goroutine behind (the
// synctest bubble fails the test otherwise).
func TestShutdownFinishesInFlightReconcilesWithinTheGracePeriodThenCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "quick", &item{})
		put(t, s, "slow", &item{})
		finished := make(chan string, 2)
		rec := ReconcilerFunc[*item](func(ctx context.Context, req Request[*item]) (Result, error) {
			d := time.Second
			if req.Key == "slow" {
				d = time.Hour
			}
			select {
			case <-time.After(d):
				finished <- req.Key
			case <-ctx.Done():
				finished <- req.Key + " cancelled"
			}
			return Result{}, nil
		})
		c, err := New(s, rec, Options[*item]{Name: "test", Workers: 2, GracePeriod: 10 * time.Second})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- c.Run(ctx) }()
		require.NoError(t, c.WaitForSync(context.Background()))
		synctest.Wait()
		began := time.Now()
		cancel()
		require.NoError(t, <-done)
		require.Equal(t, 10*time.Second, time.Since(began))
		require.ElementsMatch(t, []string{"quick", "slow cancelled"}, []string{<-finished, <-finished})
	})
}

// Run returns promptly if its context ends before the cache syncs (the
// store is down from the start).
func TestRunReturnsWhenItsContextEndsBeforeTheCacheSyncs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := faulty(t, store.NewMemory[*item]())
		s.SetOutage(faultstore.Loud)
		c, err := New[*item](s, &recorder{}, Options[*item]{Name: "test"})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, c.Run(ctx))
		require.ErrorIs(t, c.Ready(), ErrNotSynced)
		require.ErrorIs(t, c.WaitForSync(ctx), context.DeadlineExceeded)
	})
}

// SetWorkers changes, while the controller runs, how many keys are
// reconciled at once: the peak follows each new count, up or down.
func TestSetWorkersWhileRunningSetsHowManyKeysRunAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		var mu sync.Mutex
		active, peak := 0, 0
		rec := ReconcilerFunc[*item](func(ctx context.Context, req Request[*item]) (Result, error) {
			mu.Lock()
			active++
			peak = max(peak, active)
			mu.Unlock()
			advance(time.Second)
			mu.Lock()
			active--
			mu.Unlock()
			return Result{}, nil
		})
		c, err := New(s, rec, Options[*item]{Name: "test", Workers: 1})
		require.NoError(t, err)
		stop := start(t, c)
		round := 0
		burst := func() int64 { // a change of every key, each round
			var rev int64
			round++
			for i := range 8 {
				rev = put(t, s, fmt.Sprint("k", i), &item{Want: 100*round + i})
			}
			return rev
		}
		rev := burst()
		require.NoError(t, c.WaitForRevision(context.Background(), rev))
		require.Equal(t, 1, peak)
		c.SetWorkers(4)
		mu.Lock()
		peak = 0
		mu.Unlock()
		rev = burst()
		require.NoError(t, c.WaitForRevision(context.Background(), rev))
		require.Equal(t, 4, peak)
		c.SetWorkers(2)
		mu.Lock()
		peak = 0
		mu.Unlock()
		rev = burst()
		require.NoError(t, c.WaitForRevision(context.Background(), rev))
		require.Equal(t, 2, peak)
		stop()
	})
}

func TestStuckReconcileMarksUnhealthy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "stuck", &item{})
		release := make(chan struct{})
		rec := ReconcilerFunc[*item](func(ctx context.Context, req Request[*item]) (Result, error) {
			<-release
			return Result{}, nil
		})
		c, err := New(s, rec, Options[*item]{Name: "test", StuckAfter: time.Minute})
		require.NoError(t, err)
		stop := start(t, c)
		advance(30 * time.Second)
		require.NoError(t, c.Healthy())
		advance(time.Minute)
		err = c.Healthy()
		require.ErrorIs(t, err, ErrStuck)
		require.Contains(t, err.Error(), "stuck")
		h := c.Health()
		require.Len(t, h.Stuck, 1)
		require.Equal(t, "stuck", h.Stuck[0].Key)
		require.Equal(t, 90*time.Second, time.Since(h.Stuck[0].Since))
		snap := c.Snapshot()
		require.Equal(t, queue.Processing, snap[0].State)
		close(release)
		synctest.Wait()
		require.NoError(t, c.Healthy())
		stop()
	})
}

// TestEveryReconcileEndsInExactlyOneOutcome: the result and error of a
// reconcile name one outcome, terminal wins over a dependency down, which
// wins over conflict, an error wins over a requested requeue, and only
// successes and terminal failures settle the object.
func TestEveryReconcileEndsInExactlyOneOutcome(t *testing.T) {
	for _, tc := range []struct {
		res     Result
		err     error
		want    Outcome
		settled bool
	}{
		{Result{}, nil, Success, true},
		{Result{Requeue: true}, nil, Requeue, true},
		{Result{RequeueAfter: time.Second}, nil, RequeueAfter, true},
		{Result{}, errors.New("x"), Failure, false},
		{Result{Requeue: true}, errors.New("x"), Failure, false},
		{Result{}, Terminal(store.ErrConflict), TerminalFailure, true},
		{Result{}, fmt.Errorf("status: %w", store.ErrConflict), Conflict, false},
		{Result{}, &PanicError{Value: 1}, Panicked, false},
		{Result{}, dependency.Down("pg", store.ErrConflict), DependencyDown, false},
		{Result{}, Terminal(dependency.Down("pg", errors.New("x"))), TerminalFailure, true},
	} {
		got := classify(tc.res, tc.err)
		require.Equal(t, tc.want, got, "%+v %v", tc.res, tc.err)
		require.Equal(t, tc.settled, got.Settled(), "%s", got)
	}
	require.Contains(t, (&PanicError{Value: "boom"}).Error(), "boom")
}
