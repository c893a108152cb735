package etcdstore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore/etcdembed"
)

// TestDeleteEventWithoutPrevKvIsCompletedByAReadNotReportedCompacted: etcd
// can send a delete without its previous value although nothing was
// compacted (an event sent before a new watch's request for previous values
// took effect); the watch reads the value at the revision before the
// delete and delivers the event. Only when that revision is compacted is
// it ErrCompacted.
func TestDeleteEventWithoutPrevKvIsCompletedByAReadNotReportedCompacted(t *testing.T) {
	member, err := etcdembed.Start(t.TempDir())
	require.NoError(t, err)
	defer member.Close()
	client, err := etcdembed.NewClient(etcdembed.Endpoint(member))
	require.NoError(t, err)
	defer client.Close()
	s, err := New[int](client, "p/")
	require.NoError(t, err)
	ctx := context.Background()
	created, err := s.Create(ctx, "a", 7)
	require.NoError(t, err)
	rev, err := s.Delete(ctx, "a", created.Revision)
	require.NoError(t, err)

	w := &watcher[int]{s: s, parent: ctx, ctx: ctx}
	bare := &clientv3.Event{Type: clientv3.EventTypeDelete, Kv: &mvccpb.KeyValue{Key: []byte("p/a"), ModRevision: rev}}
	e, err := w.event(bare)
	require.NoError(t, err)
	require.Equal(t, store.Event[int]{Type: store.Deleted, Object: store.Object[int]{
		Key: "a", Value: 7, Revision: rev, CreateRevision: created.CreateRevision,
	}}, e)

	_, err = client.Compact(ctx, rev)
	require.NoError(t, err)
	_, err = w.event(bare)
	require.ErrorIs(t, err, store.ErrCompacted)
}
