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
	"github.com/converge-go/converge/store/faultstore"
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
		s := Wrap(env, mem, faultstore.Options{})
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
		s := Wrap(env, mem, faultstore.Options{})
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
		s := Wrap(env, store.NewMemory[*counter](), faultstore.Options{})
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
