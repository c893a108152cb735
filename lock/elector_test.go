package lock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

func newTestElector(t *testing.T, l Locker) *Elector {
	t.Helper()
	e, err := NewElector(l, ElectorOptions{})
	require.NoError(t, err)
	return e
}

func TestNewElectorRejectsBadInput(t *testing.T) {
	_, err := NewElector(nil, ElectorOptions{})
	require.ErrorIs(t, err, ErrInvalid)
	m := store.NewMemory[Record]()
	defer m.Close()
	l := newTestLease(t, m, "a")
	_, err = NewElector(l, ElectorOptions{RetryDelay: -time.Second})
	require.ErrorIs(t, err, ErrInvalid)
	_, err = NewElector(l, ElectorOptions{ReleaseTimeout: -time.Second})
	require.ErrorIs(t, err, ErrInvalid)

	e := newTestElector(t, l)
	require.ErrorIs(t, e.Run(t.Context(), nil), ErrInvalid)
	//lint:ignore SA1012 a nil context is the bad input under test
	require.ErrorIs(t, e.Run(nil, func(context.Context) error { return nil }), ErrInvalid)
}

// TestElectorLeadsUntilContextEnds: lead runs while leading; when Run's
// context ends, lead's context is cancelled, Run returns nil and the lease
// is released.
func TestElectorLeadsUntilContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemory(t)
		e := newTestElector(t, newTestLease(t, m, "a"))
		require.False(t, e.IsLeader())
		ctx, cancel := context.WithCancel(t.Context())
		leading := make(chan context.Context, 1)
		done := make(chan error, 1)
		go func() {
			done <- e.Run(ctx, func(ctx context.Context) error {
				leading <- ctx
				<-ctx.Done()
				return ctx.Err()
			})
		}()
		leadCtx := <-leading
		require.True(t, e.IsLeader())
		lk, ok := FromContext(context.WithoutCancel(leadCtx))
		require.True(t, ok, "the lead context carries the lock")
		rec, err := m.Get(t.Context(), "leader")
		require.NoError(t, err)
		require.Equal(t, rec.CreateRevision, lk.Token())
		require.Equal(t, store.Guard{Key: "leader", Revision: rec.CreateRevision, Created: true}, lk.Guard())
		_, ok = FromContext(t.Context())
		require.False(t, ok)
		<-time.After(10 * testTTL)
		require.True(t, e.IsLeader(), "a renewing leader stays leader")
		require.NoError(t, leadCtx.Err())

		cancel()
		require.NoError(t, <-done)
		require.ErrorIs(t, leadCtx.Err(), context.Canceled)
		require.False(t, e.IsLeader())
		_, err = m.Get(t.Context(), "leader")
		require.ErrorIs(t, err, store.ErrNotFound, "leadership released")
	})
}

// TestElectorWaitsForLeadAfterLoss: when leadership is lost, lead's context
// is cancelled and IsLeader turns false at once, but Run campaigns again
// only after lead has returned: lead never runs twice at once.
func TestElectorWaitsForLeadAfterLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemory(t)
		fs := newFaultStore(t, m)
		e := newTestElector(t, newTestLease(t, fs, "a"))
		ctx, cancel := context.WithCancel(t.Context())
		var running atomic.Int32
		var mu sync.Mutex
		var starts, returns []time.Time
		leading := make(chan context.Context, 2)
		done := make(chan error, 1)
		go func() {
			done <- e.Run(ctx, func(ctx context.Context) error {
				if running.Add(1) != 1 {
					t.Error("lead runs twice at once")
				}
				mu.Lock()
				starts = append(starts, time.Now())
				mu.Unlock()
				leading <- ctx
				<-ctx.Done()
				<-time.After(5 * time.Second) // slow cleanup
				mu.Lock()
				returns = append(returns, time.Now())
				mu.Unlock()
				running.Add(-1)
				return ctx.Err()
			})
		}()
		first := <-leading
		fs.failFor(testDeadline + testInterval) // renewals fail: leadership lost
		<-first.Done()
		require.ErrorIs(t, context.Cause(first), ErrLost)
		require.False(t, e.IsLeader(), "leadership in doubt is not leadership")

		second := <-leading
		require.NoError(t, second.Err())
		require.True(t, e.IsLeader())
		mu.Lock()
		require.Len(t, returns, 1)
		require.False(t, starts[1].Before(returns[0]), "campaigned again before lead returned")
		mu.Unlock()

		cancel()
		require.NoError(t, <-done)
	})
}

// TestElectorsTakeTurns: of two electors on one lease key only one leads;
// when it stops, the other leads at once.
func TestElectorsTakeTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemory(t)
		var leaders atomic.Int32
		type run struct {
			e      *Elector
			cancel context.CancelFunc
			done   chan error
			lead   chan time.Time
		}
		start := func(name string) *run {
			r := &run{e: newTestElector(t, newTestLease(t, m, name)), done: make(chan error, 1), lead: make(chan time.Time, 1)}
			ctx, cancel := context.WithCancel(t.Context())
			r.cancel = cancel
			go func() {
				r.done <- r.e.Run(ctx, func(ctx context.Context) error {
					if leaders.Add(1) != 1 {
						t.Error("two leaders at once")
					}
					r.lead <- time.Now()
					<-ctx.Done()
					leaders.Add(-1)
					return nil
				})
			}()
			return r
		}
		a := start("a")
		<-a.lead
		b := start("b")
		<-time.After(10 * testTTL)
		synctest.Wait()
		require.Empty(t, b.lead)
		require.True(t, a.e.IsLeader())
		require.False(t, b.e.IsLeader())

		stopped := time.Now()
		a.cancel()
		require.NoError(t, <-a.done)
		require.Equal(t, stopped, <-b.lead, "handover without waiting for the TTL")
		require.True(t, b.e.IsLeader())
		b.cancel()
		require.NoError(t, <-b.done)
	})
}

// TestElectorReturnsLeadError: lead returning on its own while leading ends
// Run with its error, after releasing leadership.
func TestElectorReturnsLeadError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemory(t)
		e := newTestElector(t, newTestLease(t, m, "a"))
		boom := errors.New("leader work failed")
		err := e.Run(t.Context(), func(context.Context) error { return boom })
		require.ErrorIs(t, err, boom)
		require.False(t, e.IsLeader())
		_, err = m.Get(t.Context(), "leader")
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

// TestElectorReleasesOnPanic: a panic in lead propagates after leadership is
// released.
func TestElectorReleasesOnPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemory(t)
		e := newTestElector(t, newTestLease(t, m, "a"))
		recovered := func() (r any) {
			defer func() { r = recover() }()
			_ = e.Run(t.Context(), func(context.Context) error { panic("lead panicked") })
			return nil
		}()
		require.Equal(t, "lead panicked", recovered)
		require.False(t, e.IsLeader())
		_, err := m.Get(t.Context(), "leader")
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

// fakeLocker is a Locker of another backend: Acquire fails with errs first.
type fakeLocker struct {
	mu    sync.Mutex
	errs  []error
	token int64
}

func (f *fakeLocker) Acquire(ctx context.Context) (Lock, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		return nil, err
	}
	f.token++
	lctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	return &fakeLock{ctx: lctx, cancel: cancel, token: f.token}, nil
}

type fakeLock struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	token  int64
}

func (l *fakeLock) Context() context.Context { return l.ctx }
func (l *fakeLock) Token() int64             { return l.token }
func (l *fakeLock) Guard() store.Guard {
	return store.Guard{Key: "fake", Revision: l.token, Created: true}
}
func (l *fakeLock) Release(context.Context) error {
	l.cancel(ErrReleased)
	return nil
}

// TestElectorRetriesAcquireErrors: an Elector over any Locker retries failed
// campaigns after RetryDelay.
func TestElectorRetriesAcquireErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		unavailable := errors.New("backend unavailable")
		f := &fakeLocker{errs: []error{unavailable, unavailable}}
		e, err := NewElector(f, ElectorOptions{RetryDelay: 3 * time.Second})
		require.NoError(t, err)
		start := time.Now()
		var token int64
		err = e.Run(t.Context(), func(ctx context.Context) error {
			require.Equal(t, 6*time.Second, time.Since(start))
			token = 1
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, int64(1), token)
	})
}

// TestElectorStopsWhileCampaigning: Run returns nil when its context ends
// while another process leads, leaving nothing behind.
func TestElectorStopsWhileCampaigning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemory(t)
		other, err := newTestLease(t, m, "other").Acquire(t.Context())
		require.NoError(t, err)
		e := newTestElector(t, newTestLease(t, m, "a"))
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		err = e.Run(ctx, func(context.Context) error {
			t.Error("lead ran without leadership")
			return nil
		})
		require.NoError(t, err)
		require.NoError(t, other.Release(t.Context()))
	})
}
