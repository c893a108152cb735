package manager_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/manager"
)

// mgrRunnable is a named runnable whose readiness and health tests set.
type mgrRunnable struct {
	name string
	run  func(ctx context.Context) error

	mu      sync.Mutex
	ready   error
	healthy error
}

func (r *mgrRunnable) Name() string                  { return r.name }
func (r *mgrRunnable) Run(ctx context.Context) error { return r.run(ctx) }

// mgrChecked adds ReadyChecker and HealthChecker to mgrRunnable.
type mgrChecked struct{ *mgrRunnable }

func (r mgrChecked) Ready() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ready
}

func (r mgrChecked) Healthy() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.healthy
}

func (r mgrChecked) set(ready, healthy error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ready, r.healthy = ready, healthy
}

// mgrLeaderOnly is a runnable that asks for leader election.
type mgrLeaderOnly struct{ *mgrRunnable }

func (mgrLeaderOnly) NeedsLeaderElection() bool { return true }

// untilDone returns a run function that blocks until ctx ends, closes
// stopped, and returns ctx's error.
func untilDone(stopped chan struct{}) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		<-ctx.Done()
		close(stopped)
		return ctx.Err()
	}
}

func newTestManager(t *testing.T, opts manager.Options, rs ...manager.Runnable) *manager.Manager {
	t.Helper()
	m, err := manager.New(opts)
	require.NoError(t, err)
	for _, r := range rs {
		require.NoError(t, m.Add(r))
	}
	return m
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestManagerFirstFatalErrorStopsOthersAndIsReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		stopped := make(chan struct{})
		other := &mgrRunnable{name: "other", run: untilDone(stopped)}
		failing := &mgrRunnable{name: "failing", run: func(ctx context.Context) error {
			<-time.After(time.Second)
			return boom
		}}
		m := newTestManager(t, manager.Options{}, other, failing)

		start := time.Now()
		err := m.Run(t.Context())

		require.ErrorIs(t, err, boom)
		assert.Contains(t, err.Error(), `"failing"`)
		assert.NotErrorIs(t, err, manager.ErrShutdownTimeout)
		assert.True(t, isClosed(stopped), "the other runnable was not stopped")
		assert.Equal(t, time.Second, time.Since(start), "Run did not return as soon as the others stopped")
		assert.ErrorIs(t, m.Healthy(), manager.ErrNotRunning)
	})
}

func TestManagerContextErrorBeforeShutdownIsFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A runnable's own deadline is not the manager's context ending.
		own := &mgrRunnable{name: "own-deadline", run: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			<-ctx.Done()
			return ctx.Err()
		}}
		m := newTestManager(t, manager.Options{}, own)

		err := m.Run(t.Context())

		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Contains(t, err.Error(), `"own-deadline"`)
	})
}

func TestManagerStopsCleanlyWhenContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stops := []chan struct{}{make(chan struct{}), make(chan struct{}), make(chan struct{})}
		returnsNil := manager.RunnableFunc(func(ctx context.Context) error {
			<-ctx.Done()
			close(stops[0])
			return nil
		})
		returnsCtxErr := &mgrRunnable{name: "ctx-err", run: untilDone(stops[1])}
		returnsWrapped := &mgrRunnable{name: "wrapped", run: func(ctx context.Context) error {
			<-ctx.Done()
			close(stops[2])
			return fmt.Errorf("closing: %w", ctx.Err())
		}}
		m := newTestManager(t, manager.Options{}, returnsNil, returnsCtxErr, returnsWrapped)
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)

		go func() { errc <- m.Run(ctx) }()
		synctest.Wait()
		require.NoError(t, m.Healthy())
		require.Empty(t, errc, "Run returned before its context ended")
		cancel()

		require.NoError(t, <-errc)
		for i, ch := range stops {
			assert.True(t, isClosed(ch), "runnable %d did not stop", i)
		}
		assert.ErrorIs(t, m.Healthy(), manager.ErrNotRunning)
	})
}

func TestManagerStopsCleanlyAtContextDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stopped := make(chan struct{})
		m := newTestManager(t, manager.Options{}, &mgrRunnable{name: "worker", run: untilDone(stopped)})
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()

		require.NoError(t, m.Run(ctx))
		assert.True(t, isClosed(stopped))
	})
}

func TestManagerShutdownTimeoutNamesRunnablesStillRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		stuckDone := make(chan struct{})
		stuck := &mgrRunnable{name: "stuck", run: func(ctx context.Context) error {
			defer close(stuckDone)
			<-release // ignores ctx
			return nil
		}}
		politeStopped := make(chan struct{})
		polite := &mgrRunnable{name: "polite", run: untilDone(politeStopped)}
		m := newTestManager(t, manager.Options{ShutdownTimeout: 5 * time.Second}, stuck, polite)
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- m.Run(ctx) }()
		synctest.Wait()

		cancel()
		start := time.Now()
		err := <-errc

		require.ErrorIs(t, err, manager.ErrShutdownTimeout)
		assert.Equal(t, 5*time.Second, time.Since(start))
		assert.Contains(t, err.Error(), "stuck")
		assert.NotContains(t, err.Error(), "polite")
		assert.True(t, isClosed(politeStopped))
		assert.False(t, isClosed(stuckDone))
		assert.ErrorIs(t, m.Healthy(), manager.ErrNotRunning)

		// The stuck runnable stops later; nothing of the manager is left
		// behind (synctest fails on a goroutine still blocked at the end).
		close(release)
		<-stuckDone
		synctest.Wait()
	})
}

func TestManagerShutdownTimeoutAfterFatalErrorKeepsTheError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		release := make(chan struct{})
		stuck := &mgrRunnable{name: "stuck", run: func(context.Context) error {
			<-release
			return nil
		}}
		failing := &mgrRunnable{name: "failing", run: func(context.Context) error { return boom }}
		m := newTestManager(t, manager.Options{ShutdownTimeout: time.Second}, stuck, failing)

		err := m.Run(t.Context())

		assert.ErrorIs(t, err, boom)
		assert.ErrorIs(t, err, manager.ErrShutdownTimeout)
		assert.Contains(t, err.Error(), "still running: stuck")
		close(release)
		synctest.Wait()
	})
}

func TestManagerRecoversPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		stopped := make(chan struct{})
		other := &mgrRunnable{name: "other", run: untilDone(stopped)}
		panicking := &mgrRunnable{name: "panicking", run: func(context.Context) error { panic("kaboom") }}
		m := newTestManager(t, manager.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, other, panicking)

		err := m.Run(t.Context())

		var panicked *reconcile.PanicError
		require.ErrorAs(t, err, &panicked)
		assert.Equal(t, "kaboom", panicked.Value)
		assert.NotEmpty(t, panicked.Stack)
		assert.Contains(t, err.Error(), "kaboom")
		assert.Contains(t, err.Error(), `"panicking"`)
		assert.True(t, isClosed(stopped))
		assert.Contains(t, logs.String(), "runnable panicked")
		assert.Contains(t, logs.String(), "runnable=panicking")
	})
}

func TestManagerRefusesAddAndRunOnceStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newTestManager(t, manager.Options{})
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- m.Run(ctx) }()
		synctest.Wait()

		assert.ErrorIs(t, m.Add(manager.RunnableFunc(func(context.Context) error { return nil })), manager.ErrAlreadyRunning)
		assert.ErrorIs(t, m.Run(ctx), manager.ErrAlreadyRunning)
		cancel()
		require.NoError(t, <-errc)
		assert.ErrorIs(t, m.Run(t.Context()), manager.ErrAlreadyRunning)
		assert.ErrorIs(t, m.Add(manager.RunnableFunc(func(context.Context) error { return nil })), manager.ErrAlreadyRunning)
	})
}

func TestManagerRejectsBadInput(t *testing.T) {
	_, err := manager.New(manager.Options{ShutdownTimeout: -time.Second})
	assert.ErrorIs(t, err, manager.ErrInvalid)

	m := newTestManager(t, manager.Options{})
	assert.ErrorIs(t, m.Add(nil), manager.ErrInvalid)
	assert.ErrorIs(t, m.Add(manager.RunnableFunc(nil)), manager.ErrInvalid)
	assert.ErrorIs(t, m.Add((*mgrRunnable)(nil)), manager.ErrInvalid)

	noop := func(context.Context) error { return nil }
	require.NoError(t, m.Add(&mgrRunnable{name: "twin", run: noop}))
	assert.ErrorIs(t, m.Add(&mgrRunnable{name: "twin", run: noop}), manager.ErrInvalid)
}

func TestManagerKeepsRunningWhenARunnableFinishes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		finished := &mgrRunnable{name: "one-shot", run: func(context.Context) error { return nil }}
		stopped := make(chan struct{})
		m := newTestManager(t, manager.Options{}, finished, &mgrRunnable{name: "long", run: untilDone(stopped)})
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- m.Run(ctx) }()
		synctest.Wait()

		assert.Empty(t, errc, "Run returned when one runnable finished")
		assert.False(t, isClosed(stopped))
		assert.NoError(t, m.Healthy())
		cancel()
		require.NoError(t, <-errc)
	})
}

func TestManagerWithNoRunnablesRunsUntilContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newTestManager(t, manager.Options{})
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		start := time.Now()

		require.NoError(t, m.Run(ctx))
		assert.Equal(t, time.Hour, time.Since(start))
	})
}

func TestManagerRunsLeaderOnlyRunnablesWithoutElector(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := make(chan struct{})
		leader := mgrLeaderOnly{&mgrRunnable{name: "leader", run: func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			return nil
		}}}
		m := newTestManager(t, manager.Options{}, leader)
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- m.Run(ctx) }()
		synctest.Wait()

		assert.True(t, isClosed(started))
		cancel()
		require.NoError(t, <-errc)
	})
}

func TestManagerNamesUnnamedRunnablesByPosition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		m := newTestManager(t, manager.Options{},
			manager.RunnableFunc(func(ctx context.Context) error { <-ctx.Done(); return nil }),
			manager.RunnableFunc(func(context.Context) error { return boom }))

		err := m.Run(t.Context())

		require.ErrorIs(t, err, boom)
		assert.Contains(t, err.Error(), `"runnable-2"`)
	})
}
