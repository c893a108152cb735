package main

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/replicaset/replicaset"
	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
)

// TestFencedStoreCarriesTheTermsGuard checks the path the controller's
// writes take: a write under a term carries its guard, a write without a
// term is refused, and a write under a term that has been taken over fails
// with store.ErrGuardFailed. The lease and the replica sets share one byte
// store, as they share one etcd prefix in the demo.
func TestFencedStoreCarriesTheTermsGuard(t *testing.T) {
	ctx := t.Context()
	raw := store.NewMemory[[]byte]()
	records := store.NewView[lock.Record](raw, nil)
	objects := store.NewView[*replicaset.ReplicaSet](raw, nil)
	ts := &terms{}
	locker := func(holder string) *termLocker {
		lease, err := lock.NewLease(records, leaseKey, lock.LeaseOptions{Holder: holder, TTL: time.Hour})
		require.NoError(t, err)
		return &termLocker{Locker: lease, replica: holder, terms: ts}
	}
	var writes []Term
	fenced := &fencedStore{Store: objects, wrote: func(t Term, _ object) { writes = append(writes, t) }}

	_, err := reconcile.PutSpec(ctx, objects, demoKey, replicaset.Spec{Replicas: 1})
	require.NoError(t, err)
	first, err := locker("a").Acquire(ctx)
	require.NoError(t, err)
	term, ok := termFrom(first.Context())
	require.True(t, ok, "the lock's context carries its term")
	assert.Equal(t, first.Token(), term.Token)
	assert.Equal(t, first.Guard(), term.Guard)

	cur, err := objects.Get(ctx, demoKey)
	require.NoError(t, err)
	_, err = reconcile.WriteStatus(ctx, fenced, cur, replicaset.Status{ReadyReplicas: 1})
	require.ErrorIs(t, err, errNoTerm)
	cur, err = reconcile.WriteStatus(first.Context(), fenced, cur, replicaset.Status{ReadyReplicas: 1})
	require.NoError(t, err)
	require.Len(t, writes, 1)
	assert.Equal(t, "a", writes[0].Replica)

	// a releases, b takes over: a's late write is fenced off.
	require.NoError(t, first.Release(ctx))
	second, err := locker("b").Acquire(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, second.Release(context.WithoutCancel(ctx))) }()
	_, err = reconcile.WriteStatus(withTerm(ctx, term), fenced, cur, replicaset.Status{ReadyReplicas: 2})
	require.ErrorIs(t, err, store.ErrGuardFailed)
	_, err = reconcile.WriteStatus(second.Context(), fenced, cur, replicaset.Status{ReadyReplicas: 2})
	require.NoError(t, err)

	list := ts.all()
	require.Len(t, list, 2)
	assert.False(t, list[0].End.IsZero(), "a's term ended when a released")
	_, _, found := overlap(list)
	assert.False(t, found)
	now, ok := ts.current()
	require.True(t, ok)
	assert.Equal(t, "b", now.Replica)
}

func TestOverlap(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	disjoint := []Term{
		{Replica: "b", Start: at(5), End: at(9)},
		{Replica: "a", Start: at(1), End: at(5)},
	}
	_, _, found := overlap(disjoint)
	assert.False(t, found, "a term may start the instant the previous one ended")

	a, b, found := overlap([]Term{{Replica: "a", Start: at(1), End: at(6)}, {Replica: "b", Start: at(5)}})
	assert.True(t, found)
	assert.Equal(t, []string{"a", "b"}, []string{a.Replica, b.Replica})

	_, _, found = overlap([]Term{{Replica: "a", Start: at(1)}, {Replica: "b", Start: at(5)}})
	assert.True(t, found, "a term that never ended overlaps every later one")
}

func TestCrashableFailsEveryCallOnceCrashed(t *testing.T) {
	ctx := t.Context()
	var crashed atomic.Bool
	c := crashable[int]{Store: store.NewMemory[int](), crashed: &crashed}
	obj, err := c.Create(ctx, "k", 1)
	require.NoError(t, err)
	w, err := c.Watch(ctx, "", 0)
	require.NoError(t, err)
	w.Stop()

	crashed.Store(true)
	_, err = c.Get(ctx, "k")
	assert.ErrorIs(t, err, store.ErrUnavailable)
	_, _, err = c.List(ctx, "")
	assert.ErrorIs(t, err, store.ErrUnavailable)
	_, err = c.Create(ctx, "j", 1)
	assert.ErrorIs(t, err, store.ErrUnavailable)
	_, err = c.Update(ctx, "k", 2, obj.Revision)
	assert.ErrorIs(t, err, store.ErrUnavailable)
	_, err = c.Delete(ctx, "k", obj.Revision)
	assert.ErrorIs(t, err, store.ErrUnavailable)
	_, err = c.Watch(ctx, "", 0)
	assert.ErrorIs(t, err, store.ErrUnavailable)
	_, err = c.Revision(ctx)
	assert.True(t, errors.Is(err, errCrashed))
}
