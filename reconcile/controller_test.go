package reconcile

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// New refuses, with ErrInvalid, a missing name, store or reconciler,
// negative workers or timeout, an invalid prefix, and nil predicates,
// sources or index funcs.
func TestNewRefusesInvalidOptionsWithErrInvalid(t *testing.T) {
	s := store.NewMemory[*item]()
	rec := &recorder{}
	_, err := New[*item](s, rec, Options[*item]{})
	require.ErrorIs(t, err, ErrInvalid)
	_, err = New[*item](nil, rec, Options[*item]{Name: "x"})
	require.ErrorIs(t, err, ErrInvalid)
	_, err = New[*item](s, nil, Options[*item]{Name: "x"})
	require.ErrorIs(t, err, ErrInvalid)
	_, err = New(s, rec, Options[*item]{Name: "x", Workers: -1})
	require.ErrorIs(t, err, ErrInvalid)
	_, err = New(s, rec, Options[*item]{Name: "x", Timeout: -time.Second})
	require.ErrorIs(t, err, ErrInvalid)
	_, err = New(s, rec, Options[*item]{Name: "x", Prefix: "bad\x00"})
	require.ErrorIs(t, err, ErrInvalid)
	_, err = New(s, rec, Options[*item]{Name: "x", Predicates: []Predicate[*item]{nil}})
	require.ErrorIs(t, err, ErrInvalid)
	_, err = New(s, rec, Options[*item]{Name: "x", Sources: []Source{nil}})
	require.ErrorIs(t, err, ErrInvalid)
	_, err = New(s, rec, Options[*item]{Name: "x", Indexes: map[string]func(store.Object[*item]) []string{"i": nil}})
	require.ErrorIs(t, err, ErrInvalid)
}

// A controller reconciles every key of its initial list and every later
// change with the latest object; a deletion reaches the reconciler with the
// key's last value, a key woken with no object is a deletion without one,
// and a second Run while running is ErrAlreadyRunning.
func TestReconcilesInitialListChangesAndDeletionsWithTheLastValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "a", &item{Want: 1})
		put(t, s, "b", &item{Want: 2})
		rec := &recorder{}
		c, err := New(s, rec, Options[*item]{Name: "test", Workers: 2})
		require.NoError(t, err)
		require.ErrorIs(t, c.Ready(), ErrNotSynced)
		stop := start(t, c)
		require.NoError(t, c.Ready())
		rev := put(t, s, "a", &item{Want: 3})
		require.NoError(t, c.WaitForRevision(context.Background(), rev))
		req, ok := rec.last("a")
		require.True(t, ok)
		require.Equal(t, 3, req.Object.Value.Want)
		require.Equal(t, rev, req.Object.Revision)
		require.False(t, req.Deleted)
		require.GreaterOrEqual(t, rec.count("b"), 1)

		// A deletion reaches the reconciler with the last known value.
		drev := del(t, s, "b")
		require.NoError(t, c.WaitForRevision(context.Background(), drev))
		req, _ = rec.last("b")
		require.True(t, req.Deleted)
		require.Equal(t, 2, req.Object.Value.Want)
		require.Equal(t, drev, req.Object.Revision)

		// A key woken by another source with no object is a deletion with
		// no last value.
		c.Enqueue("ghost")
		synctest.Wait()
		req, _ = rec.last("ghost")
		require.True(t, req.Deleted)
		require.Zero(t, req.Object.Revision)
		require.ErrorIs(t, c.Run(context.Background()), ErrAlreadyRunning)
		stop()
	})
}

// Ten changes to one key before a worker gets to it are one reconcile of
// the latest object: the loop is level-triggered.
func TestChangesWaitingForAWorkerCoalesceIntoOneReconcileOfTheLatest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "a", &item{})
		release := make(chan struct{})
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			if req.Key == "block" {
				<-release
			}
			return Result{}, nil
		}}
		c, err := New(s, rec, Options[*item]{Name: "test"})
		require.NoError(t, err)
		stop := start(t, c)
		synctest.Wait()
		rec.reset()
		c.Enqueue("block") // occupy the only worker
		synctest.Wait()
		var rev int64
		for i := range 10 {
			rev = put(t, s, "a", &item{Want: i})
		}
		synctest.Wait() // every change has reached the queue
		close(release)
		require.NoError(t, c.WaitForRevision(context.Background(), rev))
		require.Equal(t, 1, rec.count("a"))
		req, _ := rec.last("a")
		require.Equal(t, 9, req.Object.Value.Want)
		stop()
	})
}

// No key is reconciled by two workers at once, and N workers do serve N
// different keys concurrently.
func TestNoKeyIsReconciledByTwoWorkersAndNWorkersServeNKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		var active sync.Map
		var overlap, concurrent, peak atomic.Int32
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			if _, busy := active.LoadOrStore(req.Key, true); busy {
				overlap.Add(1)
			}
			n := concurrent.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			advance(time.Millisecond)
			concurrent.Add(-1)
			active.Delete(req.Key)
			return Result{}, nil
		}}
		c, err := New(s, rec, Options[*item]{Name: "test", Workers: 8})
		require.NoError(t, err)
		stop := start(t, c)
		var rev int64
		for round := range 20 {
			for k := range 16 {
				rev = put(t, s, string(rune('a'+k)), &item{Want: round})
			}
			advance(300 * time.Microsecond)
		}
		require.NoError(t, c.WaitForRevision(context.Background(), rev))
		require.Zero(t, overlap.Load(), "a key was reconciled by two workers at once")
		require.Equal(t, int32(8), peak.Load(), "8 workers should serve 8 keys at once")
		stop()
	})
}

func TestErrorsBackOffAndSuccessForgets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "a", &item{})
		var mu sync.Mutex
		var times []time.Duration
		var attempts []int
		start0 := time.Now()
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			mu.Lock()
			defer mu.Unlock()
			times = append(times, time.Since(start0))
			attempts = append(attempts, req.Retries)
			if len(times) < 4 {
				return Result{}, errors.New("boom")
			}
			return Result{}, nil
		}}
		c, err := New(s, rec, Options[*item]{Name: "test",
			RateLimiter: queue.NewExponential[string](time.Second, time.Minute, 0)})
		require.NoError(t, err)
		stop := start(t, c)
		advance(time.Minute)
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, []time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second}, times)
		require.Equal(t, []int{0, 1, 2, 3}, attempts)
		require.Zero(t, c.q().View().Retries("a"), "success must forget the backoff")
		snap := c.Snapshot()
		require.Len(t, snap, 1)
		require.Equal(t, Success, snap[0].LastOutcome)
		stop()
	})
}

// With an error and a requeue-after, the earlier of the two wins.
func TestErrorWithRequeueAfterTakesEarlier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "a", &item{})
		var mu sync.Mutex
		var times []time.Duration
		start0 := time.Now()
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			mu.Lock()
			defer mu.Unlock()
			times = append(times, time.Since(start0))
			switch len(times) {
			case 1: // backoff 10s, requeue 2s: 2s wins
				return Result{RequeueAfter: 2 * time.Second}, errors.New("boom")
			case 2: // backoff 20s, requeue 1h: backoff wins
				return Result{RequeueAfter: time.Hour}, errors.New("boom")
			case 3: // success with requeue-after: polled again
				return Result{RequeueAfter: 5 * time.Second}, nil
			}
			return Result{}, nil
		}}
		c, err := New(s, rec, Options[*item]{Name: "test",
			RateLimiter: queue.NewExponential[string](10*time.Second, time.Hour, 0)})
		require.NoError(t, err)
		stop := start(t, c)
		advance(2 * time.Hour)
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, []time.Duration{0, 2 * time.Second, 22 * time.Second, 27 * time.Second}, times)
		stop()
	})
}

func TestTerminalErrorIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "a", &item{})
		m := &countingMetrics{}
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			return Result{}, Terminal(errors.New("invalid spec"))
		}}
		c, err := New(s, rec, Options[*item]{Name: "test", Metrics: m})
		require.NoError(t, err)
		stop := start(t, c)
		advance(time.Hour)
		require.Equal(t, 1, rec.count("a"))
		require.Equal(t, 1, m.get("terminal"))
		require.Equal(t, 1, m.get("errors"))
		require.Equal(t, 1, m.get("total/error"))
		require.Zero(t, c.q().View().Retries("a"))
		snap := c.Snapshot()
		require.Equal(t, TerminalFailure, snap[0].LastOutcome)
		require.Contains(t, snap[0].LastError, "invalid spec")
		// A terminal reconcile still completes the change for WaitForRevision.
		rev, _ := s.Revision(context.Background())
		require.NoError(t, c.WaitForRevision(context.Background(), rev))
		require.Nil(t, Terminal(nil))
		require.ErrorIs(t, Terminal(errors.New("x")), ErrTerminal)
		stop()
	})
}

func TestPanicIsRecoveredAndRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "a", &item{})
		m := &countingMetrics{}
		var calls atomic.Int32
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			if calls.Add(1) == 1 {
				panic("nil map somewhere")
			}
			return Result{}, nil
		}}
		c, err := New(s, rec, Options[*item]{Name: "test", Metrics: m,
			RateLimiter: queue.NewExponential[string](time.Second, time.Minute, 0)})
		require.NoError(t, err)
		stop := start(t, c)
		advance(time.Minute)
		require.Equal(t, int32(2), calls.Load())
		require.Equal(t, 1, m.get("panics"))
		require.Equal(t, 1, m.get("errors"))
		require.Equal(t, 1, m.get("total/success"))
		require.Equal(t, 2, m.get("time"))
		stop()
	})
}

func TestTimeoutCancelsReconcile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "a", &item{})
		var mu sync.Mutex
		var errs []error
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			mu.Lock()
			defer mu.Unlock()
			if len(errs) > 0 {
				return Result{}, nil
			}
			<-ctx.Done()
			errs = append(errs, ctx.Err())
			return Result{}, ctx.Err()
		}}
		c, err := New(s, rec, Options[*item]{Name: "test", Timeout: 5 * time.Second,
			RateLimiter: queue.NewExponential[string](time.Second, time.Minute, 0)})
		require.NoError(t, err)
		stop := start(t, c)
		advance(time.Minute)
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, []error{context.DeadlineExceeded}, errs)
		require.Equal(t, 2, rec.count("a"))
		stop()
	})
}

// countingMetrics counts every call by name (and result).
type countingMetrics struct {
	mu sync.Mutex
	n  map[string]int
}

func (m *countingMetrics) inc(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == nil {
		m.n = map[string]int{}
	}
	m.n[name]++
}

// Reconciled counts the way a controller-runtime exporter would: the
// result label, errors, terminal errors, panics and timings.
func (m *countingMetrics) Reconciled(_ string, o Outcome, _ time.Duration) {
	result := string(o) // the result label of controller-runtime's reconcile_total
	if o.Failed() {
		result = string(Failure)
	}
	m.inc("total/" + result)
	if o.Failed() {
		m.inc("errors")
	}
	switch o {
	case TerminalFailure:
		m.inc("terminal")
	case Panicked:
		m.inc("panics")
	}
	m.inc("time")
}

// Converged counts convergences.
func (m *countingMetrics) Converged(string, time.Duration) { m.inc("converged") }

// WriteRejected counts fenced writes rejected.
func (m *countingMetrics) WriteRejected(string) { m.inc("rejected") }

// KeyRefused counts keys refused as outside the view.
func (m *countingMetrics) KeyRefused(string) { m.inc("refused") }

func (m *countingMetrics) get(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[name]
}

// A controller can run again after Run returns (once per term of
// leadership): its cache re-lists, the deletion made while it was stopped
// reaches the reconciler with the last known value, and every key is
// reconciled again.
func TestRunAgainAfterStopReconcilesWhatChangedMeanwhile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "a", &item{Want: 1})
		put(t, s, "b", &item{Want: 2})
		rec := &recorder{}
		c, err := New(s, rec, Options[*item]{Name: "test"})
		require.NoError(t, err)
		stop := start(t, c)
		synctest.Wait()
		stop()
		rec.reset()

		put(t, s, "a", &item{Want: 10})
		del(t, s, "b")
		rev := put(t, s, "c", &item{Want: 3})
		stop = start(t, c)
		require.NoError(t, c.WaitForRevision(context.Background(), rev))
		synctest.Wait()
		require.Equal(t, 1, rec.count("a"))
		require.Equal(t, 1, rec.count("c"))
		req, ok := rec.last("b")
		require.True(t, ok, "the deletion made while stopped was not reconciled")
		require.True(t, req.Deleted)
		require.Equal(t, 2, req.Object.Value.Want)
		req, _ = rec.last("a")
		require.Equal(t, 10, req.Object.Value.Want)
		require.ErrorIs(t, c.Run(context.Background()), ErrAlreadyRunning)
		stop()
	})
}

// A deletion seen but not yet reconciled when a run ends is reconciled by
// the next run, although the re-listed cache no longer holds the key.
func TestUnfinishedDeletionCarriesOverToNextRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "a", &item{Want: 1})
		block := make(chan struct{})
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			if req.Key == "block" {
				select {
				case <-block:
				case <-ctx.Done():
				}
			}
			return Result{}, nil
		}}
		c, err := New(s, rec, Options[*item]{Name: "test", GracePeriod: time.Second})
		require.NoError(t, err)
		stop := start(t, c)
		synctest.Wait()
		put(t, s, "block", &item{})
		synctest.Wait() // the only worker is busy with "block"
		drev := del(t, s, "a")
		synctest.Wait() // the deletion is in the cache and queued
		stop()
		close(block)
		_, seen := rec.last("a")
		require.True(t, seen)
		req, _ := rec.last("a")
		require.False(t, req.Deleted, "the deletion was reconciled in the first run")

		stop = start(t, c)
		require.NoError(t, c.WaitForRevision(context.Background(), drev))
		req, _ = rec.last("a")
		require.True(t, req.Deleted)
		require.Equal(t, 1, req.Object.Value.Want, "the deletion keeps its last value")
		stop()
	})
}
