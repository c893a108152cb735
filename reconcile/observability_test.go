package reconcile

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/store"
)

// latencies records Metrics.Converged calls in order.
type latencies struct {
	mu  sync.Mutex
	got []time.Duration
}

func (l *latencies) Reconciled(string, Outcome, time.Duration) {}
func (l *latencies) WriteRejected(string)                      {}
func (l *latencies) KeyRefused(string)                         {}
func (l *latencies) Converged(_ string, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, d)
}

func (l *latencies) take() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	got := l.got
	l.got = nil
	return got
}

// TestConvergenceLatencyIsExactAcrossRetriesAndSupersededChanges: the
// latency runs from when the controller observed a change to the success
// that covers it: failures and their backoff count, a change superseded
// during a backoff folds into the newer one's episode (measured from the
// older), and a change made while a reconcile runs starts its own episode
// when it is observed. Terminal failures do not converge.
func TestConvergenceLatencyIsExactAcrossRetriesAndSupersededChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		lat := &latencies{}
		var mu sync.Mutex
		failures := map[string]int{"retried": 2, "superseded": 1}
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			mu.Lock()
			defer mu.Unlock()
			if req.Key == "terminal" {
				return Result{}, Terminal(errors.New("no"))
			}
			if req.Key == "slow" {
				time.Sleep(time.Second)
			}
			if failures[req.Key] > 0 {
				failures[req.Key]--
				return Result{}, errors.New("not yet")
			}
			return Result{}, nil
		}}
		c, err := New(s, rec, Options[*item]{Name: "lat", Metrics: lat,
			RateLimiter: queue.NewExponential[string](time.Second, time.Minute, 0)})
		require.NoError(t, err)
		stop := start(t, c)
		defer stop()

		// Two failures, backing off 1 s then 2 s: converged 3 s after.
		put(t, s, "retried", &item{Want: 1})
		advance(10 * time.Second)
		require.Equal(t, []time.Duration{3 * time.Second}, lat.take())

		// One failure, then a new change 500 ms into the 1 s backoff: one
		// episode, from the first change.
		put(t, s, "superseded", &item{Want: 1})
		advance(500 * time.Millisecond)
		put(t, s, "superseded", &item{Want: 2})
		advance(10 * time.Second)
		require.Equal(t, []time.Duration{500 * time.Millisecond}, lat.take())

		// A reconcile takes 1 s; a change arrives 200 ms into it: the first
		// converges after 1 s, the second 1.8 s after it was observed.
		put(t, s, "slow", &item{Want: 1})
		advance(200 * time.Millisecond)
		put(t, s, "slow", &item{Want: 2})
		advance(10 * time.Second)
		require.Equal(t, []time.Duration{time.Second, 1800 * time.Millisecond}, lat.take())

		put(t, s, "terminal", &item{Want: 1})
		advance(10 * time.Second)
		require.Empty(t, lat.take(), "a terminal failure converged")

		snap := snapshotOf(c, "slow")
		require.Equal(t, 1800*time.Millisecond, snap.LastConvergence)
		require.True(t, snap.PendingSince.IsZero())
	})
}

// namedSource is a channel source with a name.
type namedSource struct {
	Source
	name string
}

func (n namedSource) Name() string { return n.name }

// TestSnapshotSaysWhatWokeAKey: the wake-ups that coalesce into one
// reconcile are listed once each, by kind and source name, while pending
// and then as the latest reconcile's triggers.
func TestSnapshotSaysWhatWokeAKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		gate := make(chan struct{})
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			if req.Key == "gate" {
				<-gate
			}
			return Result{}, nil
		}}
		ticks := make(chan string, 1)
		c, err := New(s, rec, Options[*item]{Name: "why", Sources: []Source{namedSource{FromChannel(ticks), "ticks"}}})
		require.NoError(t, err)
		put(t, s, "a", &item{Want: 1})
		stop := start(t, c)
		defer stop()
		synctest.Wait()
		require.Equal(t, []string{"listed"}, snapshotOf(c, "a").LastTriggers)

		put(t, s, "gate", &item{}) // the only worker blocks on it
		synctest.Wait()
		put(t, s, "a", &item{Want: 2})
		c.Enqueue("a")
		ticks <- "a"
		synctest.Wait()
		require.Equal(t, []string{"updated", "enqueued", "source ticks"}, snapshotOf(c, "a").Triggers)

		close(gate)
		synctest.Wait()
		a := snapshotOf(c, "a")
		require.Equal(t, []string{"updated", "enqueued", "source ticks"}, a.LastTriggers)
		require.Empty(t, a.Triggers)
		require.Equal(t, []string{"created"}, snapshotOf(c, "gate").LastTriggers)
	})
}

// TestStaleKeysShowInHealthAndSnapshot: a key failing for longer than
// StaleAfter, or whose change has waited that long, is stale in Health and
// Snapshot; it stops being stale once it converges. Keys that converged
// long ago are not stale.
func TestStaleKeysShowInHealthAndSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		var mu sync.Mutex
		broken := true
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			mu.Lock()
			defer mu.Unlock()
			if req.Key == "bad" && broken {
				return Result{}, errors.New("broken")
			}
			return Result{}, nil
		}}
		c, err := New(s, rec, Options[*item]{Name: "stale", StaleAfter: time.Minute})
		require.NoError(t, err)
		put(t, s, "good", &item{})
		put(t, s, "bad", &item{})
		stop := start(t, c)
		defer stop()
		advance(30 * time.Second)
		h := c.Health()
		require.Zero(t, h.Stale, "stale before StaleAfter")

		advance(time.Minute)
		h = c.Health()
		require.Equal(t, 1, h.Stale)
		require.Equal(t, []string{"bad"}, h.StaleKeys)
		require.True(t, snapshotOf(c, "bad").Stale)
		require.False(t, snapshotOf(c, "good").Stale, "a key converged long ago is not stale")
		require.False(t, snapshotOf(c, "bad").FailingSince.IsZero())

		mu.Lock()
		broken = false
		mu.Unlock()
		c.Enqueue("bad")
		synctest.Wait()
		h = c.Health()
		require.Zero(t, h.Stale)
		require.False(t, snapshotOf(c, "bad").Stale)
		require.True(t, snapshotOf(c, "bad").FailingSince.IsZero())
	})
}

// snapshotOf returns key's entry of c's snapshot.
func snapshotOf[T any](c *Controller[T], key string) KeyState {
	for _, s := range c.Snapshot() {
		if s.Key == key {
			return s
		}
	}
	return KeyState{Key: key}
}

// TestATerminallyFailedKeyIsStaleOnceOutOfDateForStaleAfter: a key whose
// latest reconcile failed terminally is not retried, so it stays out of
// date: once it has been so for StaleAfter it is stale, alike in Health,
// Snapshot and Inspect, until a change reconciles it successfully.
func TestATerminallyFailedKeyIsStaleOnceOutOfDateForStaleAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		rec := &recorder{fn: func(_ context.Context, req Request[*item]) (Result, error) {
			if req.Key == "bad" && req.Object.Value.Want == 0 {
				return Result{}, Terminal(errors.New("invalid spec"))
			}
			return Result{}, nil
		}}
		c, err := New(s, rec, Options[*item]{Name: "stale", StaleAfter: time.Minute})
		require.NoError(t, err)
		put(t, s, "good", &item{})
		put(t, s, "bad", &item{})
		defer start(t, c)()
		advance(30 * time.Second)
		require.Zero(t, c.Health().Stale, "stale before StaleAfter")
		require.False(t, snapshotOf(c, "bad").Stale)

		advance(time.Minute)
		require.Equal(t, 1, rec.count("bad"), "a terminal failure was retried")
		h := c.Health()
		require.Equal(t, 1, h.Stale)
		require.Equal(t, []string{"bad"}, h.StaleKeys)
		require.True(t, snapshotOf(c, "bad").Stale)
		page := c.Inspect(KeyQuery{Prefix: "bad"})
		require.Len(t, page.Keys, 1)
		require.True(t, page.Keys[0].Stale)
		require.False(t, snapshotOf(c, "good").Stale)

		put(t, s, "bad", &item{Want: 1}) // the spec is fixed
		synctest.Wait()
		require.Zero(t, c.Health().Stale)
		require.False(t, snapshotOf(c, "bad").Stale)
	})
}
