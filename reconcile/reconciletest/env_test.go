package reconciletest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// recordingT captures what Env reports, so that tests can check that the
// harness fails the tests it should.
type recordingT struct {
	testing.TB
	mu       sync.Mutex
	errors   []string
	cleanups []func()
}

func (r *recordingT) Helper() {}
func (r *recordingT) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recordingT) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recordingT) finish() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

type counter struct{ N, Seen int }

// statusWriter writes Seen = N if it differs; with always set it writes
// every time (not idempotent).
func statusWriter(s store.Store[*counter], always bool) reconcile.ReconcilerFunc[*counter] {
	return func(ctx context.Context, req reconcile.Request[*counter]) (reconcile.Result, error) {
		if req.Deleted || (!always && req.Object.Value.Seen == req.Object.Value.N) {
			return reconcile.Result{}, nil
		}
		next := *req.Object.Value
		next.Seen = next.N
		_, err := s.Update(ctx, req.Key, &next, req.Object.Revision)
		return reconcile.Result{}, err
	}
}

func TestConvergeCountsAndIdempotency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := NewEnv(t)
		mem := store.NewMemory[*counter]()
		s := Wrap(env, mem, Faults{})
		for i := range 10 {
			_, err := mem.Create(context.Background(), fmt.Sprint("k", i), &counter{N: i})
			require.NoError(t, err)
		}
		c, err := reconcile.New(s, statusWriter(s, false), reconcile.Options[*counter]{Name: "t", Metrics: env.Metrics()})
		require.NoError(t, err)
		env.Start(c)
		counts := env.Converge(time.Minute)
		// 10 initial reconciles; 9 write status (k0 already has Seen == N),
		// and those 9 status events reconcile again and find nothing to do.
		require.Equal(t, Counts{Reconciles: 19, Writes: 9}, counts)
		env.CheckIdempotent(time.Minute, nil)
	})
}

func TestCheckIdempotentCatchesRepeatedWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := &recordingT{TB: t}
		env := NewEnv(rt)
		mem := store.NewMemory[*counter]()
		s := Wrap(env, mem, Faults{})
		_, err := mem.Create(context.Background(), "k", &counter{N: 1})
		require.NoError(t, err)
		var mu sync.Mutex
		touchy, touched := false, false
		rec := reconcile.ReconcilerFunc[*counter](func(ctx context.Context, req reconcile.Request[*counter]) (reconcile.Result, error) {
			mu.Lock()
			again := touchy && !touched // writes once more when woken after converging
			touched = touched || again
			mu.Unlock()
			return statusWriter(s, again)(ctx, req)
		})
		c, err := reconcile.New(s, rec, reconcile.Options[*counter]{Name: "t"})
		require.NoError(t, err)
		env.Start(c)
		env.Converge(time.Minute)
		mu.Lock()
		touchy = true
		mu.Unlock()
		world := 0
		env.CheckIdempotent(time.Minute, func() any { world++; return world })
		rt.finish()
		require.Len(t, rt.errors, 2, "%v", rt.errors)
		require.Contains(t, rt.errors[0], "store writes")
		require.Contains(t, rt.errors[1], "changed the world")
	})
}

// Converge advances fake time through backoffs and delays within the
// horizon, and stops at ones beyond it.
func TestConvergeHonoursHorizon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := NewEnv(t)
		s := Wrap(env, store.NewMemory[*counter](), Faults{})
		_, err := s.Create(context.Background(), "k", &counter{})
		require.NoError(t, err)
		calls := 0
		rec := reconcile.ReconcilerFunc[*counter](func(ctx context.Context, req reconcile.Request[*counter]) (reconcile.Result, error) {
			calls++
			if calls < 3 {
				return reconcile.Result{}, errors.New("not yet")
			}
			return reconcile.Result{RequeueAfter: time.Hour}, nil // polled hourly
		})
		c, err := reconcile.New(s, rec, reconcile.Options[*counter]{Name: "t", Metrics: env.Metrics()})
		require.NoError(t, err)
		env.Start(c)
		start := time.Now()
		counts := env.Converge(time.Minute)
		require.Equal(t, int64(3), counts.Reconciles)
		require.Equal(t, int64(2), counts.Errors)
		require.Less(t, time.Since(start), time.Minute, "Converge waited for the hourly poll")
	})
}

func TestFaultStoreInjectsAndCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := NewStore(store.NewMemory[*counter](), Faults{Seed: 3, ErrorRate: 0.3, ConflictRate: 0.3, MaxLatency: time.Second})
		var unavailable, conflicts, ok, created int
		for i := range 200 {
			obj, err := s.Create(ctx, fmt.Sprint("k", i), &counter{})
			if err != nil {
				require.ErrorIs(t, err, store.ErrUnavailable)
				unavailable++
				continue
			}
			created++
			_, err = s.Update(ctx, obj.Key, &counter{N: 1}, obj.Revision)
			switch {
			case errors.Is(err, store.ErrConflict):
				conflicts++
			case errors.Is(err, store.ErrUnavailable):
				unavailable++
			case err == nil:
				ok++
			default:
				t.Fatalf("unexpected error %v", err)
			}
		}
		require.InDelta(t, 0.3*300, unavailable, 40)
		require.Positive(t, conflicts)
		require.Equal(t, int64(created+ok), s.Writes(), "only successful writes count")
		s.SetDown(true)
		_, err := s.Get(ctx, "k1")
		require.ErrorIs(t, err, store.ErrUnavailable)
		s.SetDown(false)
		require.NoError(t, s.Compact(ctx, 1))
		require.ErrorIs(t, NewStore[int](nil, Faults{}).Compact(ctx, 1), store.ErrInvalid)
	})
}

func TestFaultStoreBreaksWatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := store.NewMemory[*counter]()
		s := NewStore(mem, Faults{Seed: 1, BreakWatchEvery: 4})
		w, err := s.Watch(ctx, "", 0)
		require.NoError(t, err)
		for i := range 20 {
			_, err := mem.Create(ctx, fmt.Sprint("k", i), &counter{})
			require.NoError(t, err)
		}
		n := 0
		for range w.Events() {
			n++
		}
		require.ErrorIs(t, w.Err(), store.ErrUnavailable)
		require.GreaterOrEqual(t, n, 2)
		require.LessOrEqual(t, n, 6)

		w2, err := s.Watch(ctx, "", 0)
		require.NoError(t, err)
		s.BreakWatches()
		for range w2.Events() {
		}
		require.ErrorIs(t, w2.Err(), store.ErrUnavailable)
		w2.Stop()
	})
}

func TestExclusiveReportsOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := &recordingT{TB: t}
		release := make(chan struct{})
		inner := reconcile.ReconcilerFunc[int](func(ctx context.Context, req reconcile.Request[int]) (reconcile.Result, error) {
			<-release
			return reconcile.Result{}, nil
		})
		ex := Exclusive(rt, reconcile.Reconciler[int](inner))
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { ex.Reconcile(context.Background(), reconcile.Request[int]{Key: "same"}) })
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		require.Equal(t, int64(1), ex.Violations())
		require.Len(t, rt.errors, 1)
	})
}

// A stopped fault watcher ends with a nil error, like the stores it wraps;
// a broken one with ErrUnavailable.
func TestFaultWatcherStopEndsWithNil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewStore(store.NewMemory[*counter](), Faults{})
		w, err := s.Watch(context.Background(), "", 0)
		require.NoError(t, err)
		w.Stop()
		for range w.Events() {
		}
		require.NoError(t, w.Err())
	})
}
