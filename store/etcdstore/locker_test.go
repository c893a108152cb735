package etcdstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func newLocker(t *testing.T, s *etcdstore.Store[*item], name string) *etcdstore.Locker {
	t.Helper()
	l, err := etcdstore.NewLocker(s, name, etcdstore.WithLeaseTTL(5*time.Second))
	require.NoError(t, err)
	return l
}

func acquire(t *testing.T, l *etcdstore.Locker) lock.Lock {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	lk, err := l.Acquire(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lk.Release(context.WithoutCancel(t.Context())) })
	return lk
}

// acquireAsync starts an Acquire and returns a channel with its outcome.
func acquireAsync(ctx context.Context, l *etcdstore.Locker) <-chan lock.Lock {
	got := make(chan lock.Lock, 1)
	go func() {
		lk, err := l.Acquire(ctx)
		if err != nil {
			close(got)
			return
		}
		got <- lk
	}()
	return got
}

// await waits for a result, failing after patience.
func await[V any](t *testing.T, ch <-chan V, what string) V {
	t.Helper()
	timer := time.NewTimer(patience)
	defer timer.Stop()
	select {
	case v, ok := <-ch:
		require.True(t, ok, what)
		return v
	case <-timer.C:
		t.Fatalf("%s: nothing within %v", what, patience)
	}
	var zero V
	return zero
}

// TestLockerDeposedLeadersGuardedWritesFailAndTheNextTokenIsLarger: a leader
// whose lease is revoked (as when it expires while the holder is paused) is
// deposed: its context ends with lock.ErrLost, the next contender leads with
// a larger token, and the deposed leader's guarded writes through the store
// fail with store.ErrGuardFailed while the new leader's succeed.
func TestLockerDeposedLeadersGuardedWritesFailAndTheNextTokenIsLarger(t *testing.T) {
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	ctx := t.Context()
	s := newStore(t, client, "app/")
	a := acquire(t, newLocker(t, s, "leader"))
	require.True(t, strings.HasPrefix(a.Guard().Key, "leader/"), "guard key %q is relative to the store's prefix", a.Guard().Key)

	obj, err := s.Create(ctx, "status", &item{N: 1}, a.Guard())
	require.NoError(t, err, "the leader's guarded write")

	// A contender waits while a leads.
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = newLocker(t, s, "leader").Acquire(short)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "a contender waits while the lock is held")

	bCtx, bCancel := context.WithCancel(ctx)
	defer bCancel()
	bGot := acquireAsync(bCtx, newLocker(t, s, "leader"))

	// Depose a: revoke its lease, as its expiry would.
	raw, err := client.Get(ctx, "app/"+a.Guard().Key)
	require.NoError(t, err)
	require.Len(t, raw.Kvs, 1)
	_, err = client.Revoke(ctx, clientv3.LeaseID(raw.Kvs[0].Lease))
	require.NoError(t, err)

	b := await(t, bGot, "the contender's Acquire")
	t.Cleanup(func() { _ = b.Release(context.WithoutCancel(t.Context())) })
	require.Greater(t, b.Token(), a.Token(), "tokens grow from term to term")
	<-await(t, chanOf(a.Context().Done()), "the deposed leader's context")
	require.ErrorIs(t, context.Cause(a.Context()), lock.ErrLost)

	_, err = s.Update(ctx, "status", &item{N: 2}, obj.Revision, a.Guard())
	require.ErrorIs(t, err, store.ErrGuardFailed, "the deposed leader's write")
	_, err = s.Update(ctx, "status", &item{N: 3}, obj.Revision, b.Guard())
	require.NoError(t, err, "the new leader's write")
	require.NoError(t, b.Context().Err())
}

// chanOf wraps a done channel as a channel that delivers it once closed.
func chanOf(done <-chan struct{}) <-chan (<-chan struct{}) {
	ch := make(chan (<-chan struct{}), 1)
	go func() {
		<-done
		ch <- done
	}()
	return ch
}

// TestLockerReleaseHandsOverAtOnceAndVoidsTheGuard: Release hands the lock
// to a waiting contender at once, ends the term's context with
// lock.ErrReleased and voids its guard; a second Release is a no-op.
func TestLockerReleaseHandsOverAtOnceAndVoidsTheGuard(t *testing.T) {
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	ctx := t.Context()
	s := newStore(t, client, "app/")
	a := acquire(t, newLocker(t, s, "leader"))
	bGot := acquireAsync(ctx, newLocker(t, s, "leader"))

	require.NoError(t, a.Release(ctx))
	require.ErrorIs(t, context.Cause(a.Context()), lock.ErrReleased)
	require.NoError(t, a.Release(ctx), "a second Release")
	b := await(t, bGot, "the contender's Acquire")
	t.Cleanup(func() { _ = b.Release(context.WithoutCancel(t.Context())) })

	_, err := s.Create(ctx, "x", &item{N: 1}, a.Guard())
	require.ErrorIs(t, err, store.ErrGuardFailed, "a released term's guard")
	_, err = s.Create(ctx, "x", &item{N: 1}, b.Guard())
	require.NoError(t, err)
}

// TestLockerDeletingTheLeaderKeyDeposesTheHolder: deleting the leader key by
// hand deposes the holder.
func TestLockerDeletingTheLeaderKeyDeposesTheHolder(t *testing.T) {
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	ctx := t.Context()
	s := newStore(t, client, "app/")
	a := acquire(t, newLocker(t, s, "leader"))
	_, err := client.Delete(ctx, "app/"+a.Guard().Key)
	require.NoError(t, err)
	<-await(t, chanOf(a.Context().Done()), "the holder's context")
	require.ErrorIs(t, context.Cause(a.Context()), lock.ErrLost)
}

// TestElectorOnTheNativeLockerWritesWithTheTermsGuard: lock.Elector runs on
// the native Locker and its lead function writes with the term's guard.
func TestElectorOnTheNativeLockerWritesWithTheTermsGuard(t *testing.T) {
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	s := newStore(t, client, "app/")
	e, err := lock.NewElector(newLocker(t, s, "leader"), lock.ElectorOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	wrote := make(chan error, 1)
	ran := make(chan error, 1)
	go func() {
		ran <- e.Run(ctx, func(ctx context.Context) error {
			// Only the current leader may write: guard on the one
			// leader key under the election's prefix.
			keys, err := client.Get(ctx, "app/leader/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
			if err == nil && len(keys.Kvs) != 1 {
				err = errors.New("want exactly one leader key")
			}
			if err == nil {
				kv := keys.Kvs[0]
				g := store.Guard{Key: strings.TrimPrefix(string(kv.Key), "app/"), Revision: kv.CreateRevision, Created: true}
				_, err = s.Create(ctx, "marker", &item{N: 1}, g)
			}
			wrote <- err
			<-ctx.Done()
			return nil
		})
	}()
	require.NoError(t, await(t, wrote, "the leader's write"))
	require.True(t, e.IsLeader())
	cancel()
	require.NoError(t, await(t, ran, "Run after cancel"))
}

func TestNewLockerRefusesBadInput(t *testing.T) {
	client := clientv3.NewCtxClient(t.Context())
	defer client.Close()
	s := newStore(t, client, "app/")
	for name, make := range map[string]func() error{
		"nil store":  func() error { _, err := etcdstore.NewLocker[*item](nil, "leader"); return err },
		"empty name": func() error { _, err := etcdstore.NewLocker(s, ""); return err },
		"long name":  func() error { _, err := etcdstore.NewLocker(s, strings.Repeat("n", store.MaxKeyLen-10)); return err },
		"nil option": func() error { _, err := etcdstore.NewLocker(s, "leader", nil); return err },
		"short TTL": func() error {
			_, err := etcdstore.NewLocker(s, "leader", etcdstore.WithLeaseTTL(500*time.Millisecond))
			return err
		},
	} {
		require.ErrorIs(t, make(), store.ErrInvalid, name)
	}
	l, err := etcdstore.NewLocker(s, "leader")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = l.Acquire(ctx)
	require.ErrorIs(t, err, context.Canceled)
}
