package etcdstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/converge-go/converge/lock"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestLockerTermSurvivesItsWatchLosingTheLeader: the watch on a term's key
// fails as it does when its member has no leader (an election under way).
// That says nothing about the key, so the term goes on: the watch is opened
// again, and still ends the term with lock.ErrLost when the key is then
// deleted.
func TestLockerTermSurvivesItsWatchLosingTheLeader(t *testing.T) {
	calls := newStuckCalls()
	a, ctx, client := acquireThrough(t, calls)
	<-await(t, chanOf(calls.heard), "the watch on the leader key")

	calls.noLeader.Store(true)
	// A message on the watch for the fault to replace: an update of the
	// key that keeps its lease and its CreateRevision.
	key := "app/" + a.Guard().Key
	touch := func() {
		_, err := client.Put(ctx, key, "touched", clientv3.WithIgnoreLease())
		require.NoError(t, err)
	}
	touch()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(patience)
	for calls.noLeader.Load() || calls.watches.Load() < 2 {
		require.NoError(t, context.Cause(a.Context()), "the term ended when its watch lost the leader")
		require.True(t, time.Now().Before(deadline), "the watch was not opened again within %v (fault pending: %v, watch streams: %d)", patience, calls.noLeader.Load(), calls.watches.Load())
		<-tick.C
	}
	// Renewals go on for two TTLs: the term is alive.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); <-tick.C {
		require.NoError(t, context.Cause(a.Context()), "the term ended after its watch was opened again")
	}

	resp, err := client.Get(ctx, key)
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	require.Equal(t, a.Token(), resp.Kvs[0].CreateRevision)
	_, err = client.Delete(ctx, key)
	require.NoError(t, err)
	<-await(t, chanOf(a.Context().Done()), "the term's end once its key is deleted")
	require.ErrorIs(t, context.Cause(a.Context()), lock.ErrLost)
	require.ErrorContains(t, context.Cause(a.Context()), "deleted")
}

// TestLockerTermChecksItsKeyAcrossACompactedGapInItsWatch: when the watch
// on a term's key is opened again from a revision already compacted, the
// events in the gap are gone, so the term reads its key: it goes on while
// the key is still its own, and ends with lock.ErrLost once the key was
// deleted in such a gap.
func TestLockerTermChecksItsKeyAcrossACompactedGapInItsWatch(t *testing.T) {
	calls := newStuckCalls()
	a, ctx, client := acquireThrough(t, calls)
	<-await(t, chanOf(calls.heard), "the watch on the leader key")
	key := "app/" + a.Guard().Key
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()

	// gap breaks the watch, holds its next opening while change runs and
	// the store is compacted, then lets it open.
	gap := func(change func()) {
		t.Helper()
		calls.holdWatches()
		before := calls.watches.Load()
		calls.noLeader.Store(true)
		_, err := client.Put(ctx, key, "touched", clientv3.WithIgnoreLease())
		require.NoError(t, err)
		deadline := time.Now().Add(patience)
		for calls.watches.Load() <= before {
			require.True(t, time.Now().Before(deadline), "the watch was not opened again within %v", patience)
			<-tick.C
		}
		change()
		resp, err := client.Put(ctx, "app/elsewhere", "x")
		require.NoError(t, err)
		_, err = client.Compact(ctx, resp.Header.Revision)
		require.NoError(t, err)
		calls.releaseWatches()
	}

	gap(func() {})
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); <-tick.C {
		require.NoError(t, context.Cause(a.Context()), "the term ended across a gap that left its key alone")
	}

	gap(func() {
		_, err := client.Delete(ctx, key)
		require.NoError(t, err)
	})
	<-await(t, chanOf(a.Context().Done()), "the term's end once its key went in a gap")
	require.ErrorIs(t, context.Cause(a.Context()), lock.ErrLost)
	require.ErrorContains(t, context.Cause(a.Context()), "compacted", "the term did not end by reading its key")
}
