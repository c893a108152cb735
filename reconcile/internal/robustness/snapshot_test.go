package robustness_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
	"github.com/converge-go/converge/store/snapshot"
	"github.com/stretchr/testify/require"
)

// desired is the value type of the snapshot tests.
type desired struct {
	Replicas int    `json:"replicas"`
	Image    string `json:"image"`
}

// openBolt opens a new bbolt store, closed at t's cleanup.
func openBolt(t *testing.T) *boltstore.Store[desired] {
	t.Helper()
	s, err := boltstore.Open[desired](filepath.Join(t.TempDir(), "store.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// A snapshot saved from any backend (memory, bbolt, etcd, bbolt served
// over HTTP) restores into bbolt and into etcd: the restored store lists
// the snapshot's keys and values, under an identity of its own; a watch
// after a revision the old store had fails with ErrCompacted where the
// restore's revisions are above it, and a later write takes a revision
// above the restore's (on bbolt, above the snapshot's plus the bump).
func TestASnapshotOfEveryBackendRestoresIntoBoltAndEtcd(t *testing.T) {
	members, err := startEtcdCluster(t, 1)
	require.NoError(t, err)
	client, err := newEtcdClient(t, members)
	require.NoError(t, err)
	etcdSource, err := etcdstore.New[desired](client, "source/")
	require.NoError(t, err)
	sources := map[string]store.Store[desired]{
		"memory":       store.NewMemory[desired](),
		"bolt":         openBolt(t),
		"etcd":         etcdSource,
		"bolt on HTTP": httpstoretest.Serve[desired](t, openBolt(t), httpstoretest.Options{}),
	}
	n := 0
	for name, src := range sources {
		ctx := t.Context()
		for i := range 30 {
			_, err := src.Create(ctx, fmt.Sprintf("app/%02d", i), desired{Replicas: i, Image: name})
			require.NoError(t, err)
		}
		want, _, err := src.List(ctx, "")
		require.NoError(t, err)
		var buf bytes.Buffer
		info, err := snapshot.Save(ctx, &buf, snapshot.Typed(src, nil))
		require.NoError(t, err)
		require.NotEmpty(t, info.Identity, name)

		t.Run(name+" into bolt", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "restored.db")
			restored, err := boltstore.Restore(path, bytes.NewReader(buf.Bytes()))
			require.NoError(t, err)
			s, err := boltstore.Open[desired](path)
			require.NoError(t, err)
			defer s.Close()
			checkRestored(t, s, want, info, restored)
			require.Equal(t, info.Revision+boltstore.DefaultRevisionBump, restored.Revision)
			_, err = s.Watch(ctx, "", info.Revision)
			require.ErrorIs(t, err, store.ErrCompacted)
		})
		t.Run(name+" into etcd", func(t *testing.T) {
			n++
			prefix := fmt.Sprintf("restored/%d/", n)
			before, err := etcdSource.Revision(ctx)
			require.NoError(t, err)
			restored, err := etcdstore.Restore(ctx, client, prefix, bytes.NewReader(buf.Bytes()))
			require.NoError(t, err)
			s, err := etcdstore.New[desired](client, prefix)
			require.NoError(t, err)
			checkRestored(t, s, want, info, restored)
			w, err := s.Watch(ctx, "", before)
			if err == nil {
				defer w.Stop()
				_, open := <-w.Events()
				require.False(t, open)
				err = w.Err()
			}
			require.ErrorIs(t, err, store.ErrCompacted)
		})
	}
	require.NoError(t, sources["memory"].(*store.Memory[desired]).Close())
}

// checkRestored checks that s, restored from the snapshot info of a store
// that listed want, lists want's keys and values under a new identity, at
// no revision below the restore's, and that a later write comes after it.
func checkRestored(t *testing.T, s store.Store[desired], want []store.Object[desired], info snapshot.Info, restored snapshot.Restored) {
	t.Helper()
	ctx := t.Context()
	objs, rev, err := s.List(ctx, "")
	require.NoError(t, err)
	require.GreaterOrEqual(t, rev, restored.Revision)
	require.Len(t, objs, len(want))
	for i, o := range objs {
		require.Equal(t, want[i].Key, o.Key)
		require.Equal(t, want[i].Value, o.Value)
	}
	id, err := s.(store.Identifier).Identity(ctx)
	require.NoError(t, err)
	require.Equal(t, restored.Identity, id)
	require.NotEqual(t, info.Identity, id)
	later, err := s.Create(ctx, "later", desired{Replicas: 1})
	require.NoError(t, err)
	require.Greater(t, later.Revision, restored.Revision)
}
