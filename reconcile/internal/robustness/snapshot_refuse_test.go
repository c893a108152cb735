package robustness_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
	"github.com/converge-go/converge/store/snapshot"
	"github.com/converge-go/converge/store/snapshot/snapshottest"
)

// A snapshot saved from any backend (memory, bbolt, etcd, bbolt served
// over HTTP), then given one value the store restored into could not
// serve (not JSON, for a store of JSON values), is refused by a restore
// into bbolt and into etcd that checks values as the store server does
// (WithValueCheck of the codec): the error matches snapshot.ErrUnservable
// and store.ErrInvalid and names the key, and nothing is written (no
// bbolt file, no key under the etcd prefix). The snapshot as saved
// restores under the same check.
func TestASnapshotOfEveryBackendWithAValueNoStoreCanServeRestoresNowhere(t *testing.T) {
	members, err := startEtcdCluster(t, 1)
	require.NoError(t, err)
	client, err := newEtcdClient(t, members)
	require.NoError(t, err)
	etcdSource, err := etcdstore.New[desired](client, "source/")
	require.NoError(t, err)
	memory := store.NewMemory[desired]()
	t.Cleanup(func() { _ = memory.Close() })
	sources := map[string]store.Store[desired]{
		"memory":       memory,
		"bolt":         openBolt(t),
		"etcd":         etcdSource,
		"bolt on HTTP": httpstoretest.Serve[desired](t, openBolt(t), httpstoretest.Options{}),
	}
	check := snapshot.Decodes[desired](store.JSON[desired]{}, nil)
	n := 0
	for name, src := range sources {
		ctx := t.Context()
		for i := range 5 {
			_, err := src.Create(ctx, fmt.Sprintf("app/%02d", i), desired{Replicas: i, Image: name})
			require.NoError(t, err)
		}
		var saved bytes.Buffer
		_, err := snapshot.Save(ctx, &saved, snapshot.Typed(src, nil))
		require.NoError(t, err)
		info, objs, err := snapshot.Read(bytes.NewReader(saved.Bytes()))
		require.NoError(t, err)
		var bad bytes.Buffer
		require.NoError(t, snapshottest.Write(&bad, snapshottest.Header{Identity: info.Identity, Revision: info.Revision},
			append(objs, snapshottest.Object("app/zz", "not json", info.Revision))...))
		refused := func(t *testing.T, err error) {
			t.Helper()
			require.ErrorIs(t, err, snapshot.ErrUnservable)
			require.ErrorIs(t, err, store.ErrInvalid)
			require.ErrorContains(t, err, `"app/zz"`)
		}

		t.Run(name+" into bolt", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "restored.db")
			_, err := boltstore.Restore(path, bytes.NewReader(bad.Bytes()), boltstore.WithValueCheck(check))
			refused(t, err)
			_, err = os.Stat(path)
			require.True(t, errors.Is(err, os.ErrNotExist), "a refused restore left %s: %v", path, err)
			_, err = boltstore.Restore(path, bytes.NewReader(saved.Bytes()), boltstore.WithValueCheck(check))
			require.NoError(t, err, "the snapshot as saved")
		})
		t.Run(name+" into etcd", func(t *testing.T) {
			n++
			prefix := fmt.Sprintf("refused/%d/", n)
			_, err := etcdstore.Restore(ctx, client, prefix, bytes.NewReader(bad.Bytes()), etcdstore.WithValueCheck(check))
			refused(t, err)
			got, err := client.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
			require.NoError(t, err)
			require.Zero(t, got.Count, "a refused restore wrote under %s", prefix)
			_, err = etcdstore.Restore(ctx, client, prefix, bytes.NewReader(saved.Bytes()), etcdstore.WithValueCheck(check))
			require.NoError(t, err, "the snapshot as saved")
		})
	}
}
