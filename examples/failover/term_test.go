package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// TestTermLockerRecordsEachTerm checks the record the demo's summary and
// test rely on: each acquisition starts a term with its token, a release
// ends it, and the next holder's term follows it with a larger token.
func TestTermLockerRecordsEachTerm(t *testing.T) {
	ctx := t.Context()
	records := store.NewMemory[lock.Record]()
	ts := &terms{}
	locker := func(holder string) *termLocker {
		lease, err := lock.NewLease(records, leaseKey, lock.LeaseOptions{Holder: holder, TTL: time.Hour})
		require.NoError(t, err)
		return &termLocker{Locker: lease, replica: holder, terms: ts}
	}

	first, err := locker("a").Acquire(ctx)
	require.NoError(t, err)
	now, ok := ts.current()
	require.True(t, ok)
	assert.Equal(t, "a", now.Replica)
	assert.Equal(t, first.Token(), now.Token)
	require.NoError(t, first.Release(ctx))
	_, ok = ts.current()
	assert.False(t, ok, "a's term ended when a released")

	second, err := locker("b").Acquire(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, second.Release(context.WithoutCancel(ctx))) }()
	list := ts.all()
	require.Len(t, list, 2)
	assert.False(t, list[0].End.IsZero())
	assert.True(t, list[1].End.IsZero())
	assert.Greater(t, list[1].Token, list[0].Token)
	_, _, found := overlap(list)
	assert.False(t, found)
}

// TestHeldWriteOfATakenOverTermIsRejected checks the demo's late write over
// a memory store: a status write sent through lock.Fenced while its term is
// current, held by the network until another term has begun, is rejected
// by the store with store.ErrGuardFailed although its compare-and-swap
// would pass; the same write delivered while the term lasts is accepted.
// The lease and the replica sets share one byte store, as they share one
// etcd prefix in the demo.
func TestHeldWriteOfATakenOverTermIsRejected(t *testing.T) {
	ctx := t.Context()
	raw := store.NewMemory[[]byte]()
	records := store.NewView[lock.Record](raw, nil)
	objects := store.NewView[*controller.ReplicaSet](raw, nil)
	acquire := func(holder string) lock.Lock {
		lease, err := lock.NewLease(records, leaseKey, lock.LeaseOptions{Holder: holder, TTL: time.Hour})
		require.NoError(t, err)
		lk, err := lease.Acquire(ctx)
		require.NoError(t, err)
		return lk
	}
	_, err := resource.PutSpec(ctx, objects, demoKey, controller.Spec{Replicas: 1})
	require.NoError(t, err)
	// send writes the status through the network under lk's term and
	// returns once the network holds the write.
	send := func(lk lock.Lock, ready int) (*delayed[*controller.ReplicaSet], <-chan error) {
		net := newDelayed[*controller.ReplicaSet](objects)
		fenced, err := lock.Fenced[*controller.ReplicaSet](net, lk)
		require.NoError(t, err)
		cur, err := objects.Get(ctx, demoKey)
		require.NoError(t, err)
		res := make(chan error, 1)
		go func() {
			_, err := resource.WriteStatus(ctx, fenced, cur, controller.Status{ReadyReplicas: ready})
			res <- err
		}()
		<-net.sent
		return net, res
	}

	a := acquire("a")
	net, res := send(a, 1)
	net.deliver()
	require.NoError(t, <-res, "a write delivered while its term lasts is accepted")

	net, res = send(a, 2)
	require.NoError(t, a.Release(ctx))
	b := acquire("b")
	defer func() { require.NoError(t, b.Release(context.WithoutCancel(ctx))) }()
	before, err := objects.Get(ctx, demoKey)
	require.NoError(t, err)
	net.deliver()
	require.ErrorIs(t, <-res, store.ErrGuardFailed)
	after, err := objects.Get(ctx, demoKey)
	require.NoError(t, err)
	assert.Equal(t, before.Revision, after.Revision, "the late write changed the replica set")
	assert.Equal(t, 1, after.Value.Status.ReadyReplicas)
}

func TestOverlapFindsTermsHeldAtTheSameTime(t *testing.T) {
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
