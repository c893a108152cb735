package reconcile

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// writeSeen writes status through the request's store: Seen = Want.
func writeSeen(ctx context.Context, req Request[*item]) (store.Object[*item], error) {
	next := *req.Object.Value
	next.Seen++
	return req.Store.Update(ctx, req.Key, &next, req.Object.Revision)
}

// TestStatusWriteThenErrorBacksOffOnTheLimitersSchedule: a reconcile that
// writes status and then fails must wait out its backoff; the echo of its
// own write must not wake the key early.
func TestStatusWriteThenErrorBacksOffOnTheLimitersSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "job", &item{Want: 1})
		var mu sync.Mutex
		var at []time.Time
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			mu.Lock()
			at = append(at, time.Now())
			n := len(at)
			mu.Unlock()
			_, err := writeSeen(ctx, req)
			require.NoError(t, err)
			if n <= 4 {
				return Result{}, errors.New("the job's attempt failed")
			}
			return Result{}, nil
		}}
		c := newTxnController(t, s, rec, Options[*item]{RateLimiter: queue.NewExponential[string](200*time.Millisecond, time.Minute, 0)})
		defer start(t, c)()
		advance(time.Minute)
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, at, 5, "the key was reconciled more often than its backoff allows")
		want := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond}
		for i, w := range want {
			require.Equal(t, w, at[i+1].Sub(at[i]), "retry %d came early: its own status write cancelled the backoff", i+1)
		}
	})
}

// TestForeignWriteWakesAKeyInBackoff: changes made by anyone else still
// wake a key at once.
func TestForeignWriteWakesAKeyInBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "job", &item{Want: 1})
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			if _, err := writeSeen(ctx, req); err != nil {
				return Result{}, err
			}
			return Result{}, errors.New("failing")
		}}
		c := newTxnController(t, s, rec, Options[*item]{RateLimiter: queue.NewExponential[string](time.Hour, time.Hour, 0)})
		defer start(t, c)()
		synctest.Wait()
		require.Equal(t, 1, rec.count("job"))
		obj, err := s.Get(context.Background(), "job")
		require.NoError(t, err)
		other := *obj.Value
		other.Owner = "someone else"
		_, err = s.Update(context.Background(), "job", &other, obj.Revision)
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, 2, rec.count("job"), "another writer's change did not wake the key")
	})
}

// TestNoReconcileSeesAnObjectOlderThanItsOwnWrite runs 1,000 rounds of
// write-status-and-requeue while the cache lags (its watch held back for
// stretches): no reconcile may receive an object older than the newest one
// its controller wrote.
func TestNoReconcileSeesAnObjectOlderThanItsOwnWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTxnStore()
		s.txn(write{"job", &item{Want: 1}})
		var mu sync.Mutex
		var lastWritten int64
		stale, rounds := 0, 0
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			mu.Lock()
			if req.Object.Revision < lastWritten {
				stale++
			}
			rounds++
			mu.Unlock()
			obj, err := writeSeen(ctx, req)
			if err != nil {
				return Result{}, err
			}
			mu.Lock()
			lastWritten = obj.Revision
			mu.Unlock()
			return Result{RequeueAfter: time.Millisecond}, nil
		}}
		c := newTxnController(t, s, rec, Options[*item]{})
		defer start(t, c)()
		synctest.Wait()
		for i := range 100 {
			s.pauseWatches(i%2 == 0) // the cache lags for ten rounds, then catches up
			advance(10 * time.Millisecond)
		}
		s.pauseWatches(false)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		require.GreaterOrEqual(t, rounds, 1000)
		require.Zero(t, stale, "reconciles saw objects older than their controller's own writes")
		held, _, _ := c.led.own.sizes()
		require.LessOrEqual(t, held, 1, "own-write records pile up")
	})
}

// TestRequeueBacksOffWithoutAFailure: Result{Requeue: true} retries on the
// key's rate limiter, counts Retries, logs and counts no failure.
func TestRequeueBacksOffWithoutAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "job", &item{})
		var mu sync.Mutex
		var at []time.Time
		var attempts []int
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			mu.Lock()
			defer mu.Unlock()
			at = append(at, time.Now())
			attempts = append(attempts, req.Retries)
			return Result{Requeue: len(at) <= 3}, nil
		}}
		m := &countingMetrics{}
		c := newTxnController(t, s, rec, Options[*item]{Metrics: m, RateLimiter: queue.NewExponential[string](time.Second, time.Minute, 0)})
		defer start(t, c)()
		advance(time.Minute)
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, []int{0, 1, 2, 3}, attempts)
		require.Equal(t, time.Second, at[1].Sub(at[0]))
		require.Equal(t, 2*time.Second, at[2].Sub(at[1]))
		require.Equal(t, 4*time.Second, at[3].Sub(at[2]))
		require.Equal(t, 3, m.get("total/"+string(Requeue)))
		require.Zero(t, m.get("errors"))
		require.Zero(t, c.opts.RateLimiter.NumRequeues("job"), "the backoff was not forgotten after success")
	})
}

// TestDeposedLeadersWritesThroughTheControllerAreRejected: a leader whose
// lease was taken over (it has not noticed yet) writes status through its
// request's store, with no fencing code of its own: the store rejects it.
// After its term ends, a write is refused before reaching the store.
func TestDeposedLeadersWritesThroughTheControllerAreRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Guards check keys of the same store: the lease record and the
		// items share one byte store through two typed views.
		raw := store.NewMemory[[]byte]()
		s := store.NewView[*item](raw, store.JSON[*item]{})
		leases := store.NewView[lock.Record](raw, store.JSON[lock.Record]{})
		put(t, s, "job", &item{Want: 1})
		lease, err := lock.NewLease(leases, "leader", lock.LeaseOptions{Holder: "a", TTL: 30 * time.Second})
		require.NoError(t, err)
		el, err := lock.NewElector(lease, lock.ElectorOptions{})
		require.NoError(t, err)

		inReconcile, takenOver := make(chan Request[*item]), make(chan struct{})
		results := make(chan error, 2)
		var first sync.Once
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			first.Do(func() {
				// While the term is current, its writes go through.
				obj, err := writeSeen(ctx, req)
				results <- err
				req.Object = obj
				inReconcile <- req
				<-takenOver
				_, err = writeSeen(ctx, req)
				results <- err
			})
			return Result{}, nil
		}}
		m := &countingMetrics{}
		c := newTxnController(t, s, rec, Options[*item]{Metrics: m})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- el.Run(ctx, c.Run) }()
		require.NoError(t, <-results, "the current term's write was refused")
		req := <-inReconcile

		// Another replica takes the lease over while this one still
		// believes it leads.
		rec0, err := leases.Get(context.Background(), "leader")
		require.NoError(t, err)
		_, err = leases.Delete(context.Background(), "leader", rec0.Revision)
		require.NoError(t, err)
		_, err = leases.Create(context.Background(), "leader", lock.Record{Holder: "b"})
		require.NoError(t, err)
		close(takenOver)
		require.ErrorIs(t, <-results, store.ErrGuardFailed, "a deposed leader's status write was accepted")
		obj, err := s.Get(context.Background(), "job")
		require.NoError(t, err)
		require.Equal(t, 1, obj.Value.Seen, "the deposed leader's write changed the store")

		// Once the term is over, the request's store refuses to write.
		advance(time.Minute)
		_, err = req.Store.Update(context.Background(), "job", &item{Want: 1, Seen: 1}, obj.Revision)
		require.ErrorIs(t, err, store.ErrGuardFailed)
		require.Equal(t, 2, m.get("rejected"), "Metrics.WriteRejected counts each fenced write refused")
		cancel()
		<-done
	})
}
