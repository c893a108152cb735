package dependency_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/store"
)

// world is a dependency a test takes down and brings back: its check
// fails with the error set (or, hanging, blocks until its context ends),
// and it counts the checks.
type world struct {
	mu     sync.Mutex
	err    error
	hang   bool
	checks atomic.Int64
}

func (w *world) set(err error, hang bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err, w.hang = err, hang
}

func (w *world) check(ctx context.Context) error {
	w.checks.Add(1)
	w.mu.Lock()
	err, hang := w.err, w.hang
	w.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

// running runs s until the test's bubble ends it.
func running(t *testing.T, s *dependency.Set) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

func advance(d time.Duration) { <-time.After(d) }

var errRefused = errors.New("connection refused")

// A dependency whose checks start failing is down once FailureThreshold
// of them have failed: within FailureThreshold × Interval when they fail
// at once, (FailureThreshold+1) × Interval when they hang until their
// timeout, never before; it is up again at its first successful check,
// within one Interval.
func TestADependencyIsDownWithinItsBoundAndUpAtItsFirstSuccessfulCheck(t *testing.T) {
	for _, hang := range []bool{false, true} {
		t.Run(map[bool]string{false: "failing", true: "hanging"}[hang], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const interval, threshold = 2 * time.Second, 3
				w := &world{}
				s, err := dependency.NewSet(&dependency.Dependency{Name: "pg", Check: w.check, Interval: interval, FailureThreshold: threshold})
				require.NoError(t, err)
				running(t, s)
				advance(interval + interval/3) // break between two checks
				w.set(errRefused, hang)
				broke := time.Now()
				bound := threshold * interval
				if hang {
					bound += interval
				}
				for synctest.Wait(); !s.States()[0].Down; synctest.Wait() {
					require.Less(t, time.Since(broke), bound, "still up past the bound")
					require.NoError(t, s.Err())
					advance(interval / 10)
				}
				require.GreaterOrEqual(t, s.States()[0].Failures, threshold, "down before its threshold")
				require.ErrorIs(t, s.Err(), dependency.ErrDown)

				w.set(nil, false)
				back := time.Now()
				for synctest.Wait(); s.States()[0].Down; synctest.Wait() {
					require.Less(t, time.Since(back), interval, "still down past one interval")
					advance(interval / 10)
				}
				require.NoError(t, s.Err())
				require.Zero(t, s.States()[0].Failures)
			})
		})
	}
}

// States names every dependency in order, up or down, with since when,
// its failures and the latest error (kept once it is up again); Err names
// each one down and matches ErrDown.
func TestStatesAndErrNameEachDependencyDownWithSinceAndTheLastError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		made := time.Now()
		pg, mq := &world{}, &world{}
		s, err := dependency.NewSet(
			&dependency.Dependency{Name: "pg", Check: pg.check, FailureThreshold: 1},
			&dependency.Dependency{Name: "mq", Check: mq.check, FailureThreshold: 1},
		)
		require.NoError(t, err)
		running(t, s)
		synctest.Wait()
		st := s.States()
		require.Len(t, st, 2)
		require.Equal(t, dependency.State{Name: "pg", Since: made, Checked: made}, st[0])

		advance(time.Second)
		pg.set(errRefused, false)
		mq.set(errors.New("no route"), false)
		advance(dependency.DefaultInterval)
		downAt := made.Add(dependency.DefaultInterval)
		st = s.States()
		require.Equal(t, dependency.State{Name: "pg", Down: true, Since: downAt, Failures: 1, LastError: "connection refused", Checked: downAt}, st[0])
		require.True(t, st[1].Down)
		err = s.Err()
		require.ErrorIs(t, err, dependency.ErrDown)
		require.ErrorContains(t, err, "dependency: down: pg since "+downAt.UTC().Format(time.RFC3339)+" (failures: 1): connection refused")
		require.ErrorContains(t, err, "mq since")

		pg.set(nil, false)
		advance(dependency.DefaultInterval)
		st = s.States()
		require.False(t, st[0].Down)
		require.Equal(t, downAt.Add(dependency.DefaultInterval), st[0].Since, "Since is when it came back up")
		require.Equal(t, "connection refused", st[0].LastError, "the last error is kept")
		require.NotContains(t, s.Err().Error(), "pg")
	})
}

// Blame takes a dependency down at once, before its next check, for an
// error marked with Down; an unmarked error or an unknown name changes
// nothing; the next successful check brings the dependency back up.
func TestBlameTakesADependencyDownAtOnceUntilItsNextSuccessfulCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &world{}
		s, err := dependency.NewSet(&dependency.Dependency{Name: "pg", Check: w.check})
		require.NoError(t, err)
		running(t, s)
		synctest.Wait()
		require.False(t, s.Blame(errRefused), "an unmarked error")
		require.False(t, s.Blame(dependency.Down("mq", errRefused)), "another dependency")
		require.NoError(t, s.Err())

		marked := dependency.Down("pg", errRefused)
		require.ErrorIs(t, marked, dependency.ErrDown)
		require.ErrorIs(t, marked, errRefused)
		require.EqualError(t, marked, "dependency: down: pg: connection refused")
		require.True(t, s.Blame(marked))
		st := s.States()[0]
		require.True(t, st.Down, "down before the next check")
		require.Equal(t, "connection refused", st.LastError)
		require.Equal(t, int64(1), w.checks.Load())

		advance(dependency.DefaultInterval)
		synctest.Wait()
		require.False(t, s.States()[0].Down, "up at the next successful check")
		require.NoError(t, dependency.Down("pg", nil))
	})
}

// Watch's channel closes when the first dependency goes down and when the
// last one down comes back up, not on changes in between.
func TestWatchTellsTheFirstDependencyDownAndTheLastBackUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pg, mq := &world{}, &world{}
		s, err := dependency.NewSet(
			&dependency.Dependency{Name: "pg", Check: pg.check},
			&dependency.Dependency{Name: "mq", Check: mq.check},
		)
		require.NoError(t, err)
		down, changed := s.Watch()
		require.False(t, down)
		require.True(t, s.Blame(dependency.Down("pg", errRefused)))
		requireClosed(t, changed)

		down, changed = s.Watch()
		require.True(t, down)
		require.True(t, s.Blame(dependency.Down("mq", errRefused)))
		requireOpen(t, changed)
		running(t, s) // both checks succeed: both up
		synctest.Wait()
		requireClosed(t, changed)
		down, _ = s.Watch()
		require.False(t, down)
	})
}

func requireClosed(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	default:
		t.Fatal("channel not closed")
	}
}

func requireOpen(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
		t.Fatal("channel closed")
	default:
	}
}

// A check that panics fails, with the panic's value as its error, and so
// does one that outlasts its Interval; the set keeps checking.
func TestACheckThatPanicsOrOutlastsItsIntervalFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		s, err := dependency.NewSet(
			&dependency.Dependency{Name: "panics", FailureThreshold: 2, Check: func(context.Context) error {
				calls.Add(1)
				panic("boom")
			}},
			&dependency.Dependency{Name: "slow", FailureThreshold: 1, Check: func(ctx context.Context) error {
				<-ctx.Done()
				return ctx.Err()
			}},
		)
		require.NoError(t, err)
		running(t, s)
		advance(2 * dependency.DefaultInterval)
		synctest.Wait()
		st := s.States()
		require.True(t, st[0].Down)
		require.Equal(t, "check panicked: boom", st[0].LastError)
		require.True(t, st[1].Down)
		require.Equal(t, "check timed out after 5s: context deadline exceeded", st[1].LastError)
		require.GreaterOrEqual(t, calls.Load(), int64(2))
	})
}

// Bad dependencies are refused with ErrInvalid, never a panic; Run while
// running is ErrAlreadyRunning; the zero Set has no dependency, is never
// down and runs until its context ends.
func TestBadInputIsRefusedAndTheZeroSetWorks(t *testing.T) {
	ok := func(context.Context) error { return nil }
	shared := &dependency.Dependency{Name: "pg", Check: ok}
	for name, deps := range map[string][]*dependency.Dependency{
		"no name":        {{Check: ok}},
		"no check":       {{Name: "pg"}},
		"duplicate":      {{Name: "pg", Check: ok}, {Name: "pg", Check: ok}},
		"bad utf-8":      {{Name: "p\xffg", Check: ok}},
		"control":        {{Name: "p\ng", Check: ok}},
		"neg interval":   {{Name: "pg", Check: ok, Interval: -1}},
		"neg threshold":  {{Name: "pg", Check: ok, FailureThreshold: -1}},
		"second invalid": {{Name: "pg", Check: ok}, {Name: "mq"}},
		"nil":            {nil},
		"given twice":    {shared, shared},
	} {
		_, err := dependency.NewSet(deps...)
		require.ErrorIs(t, err, dependency.ErrInvalid, name)
		require.ErrorIs(t, err, store.ErrInvalid, "%s: the ErrInvalid of every package", name)
	}
	synctest.Test(t, func(t *testing.T) {
		var zero dependency.Set
		require.Empty(t, zero.States())
		require.NoError(t, zero.Err())
		require.False(t, zero.Blame(dependency.Down("pg", errRefused)))
		down, _ := zero.Watch()
		require.False(t, down)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- zero.Run(ctx) }()
		synctest.Wait()
		require.ErrorIs(t, zero.Run(ctx), dependency.ErrAlreadyRunning)
		cancel()
		require.NoError(t, <-done)
	})
}
