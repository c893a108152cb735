package etcdstore_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
	"github.com/converge-go/converge/store/snapshot"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// fillItems creates n objects in s, updates one and deletes another.
func fillItems(t *testing.T, s store.Store[*item], n int) {
	t.Helper()
	ctx := t.Context()
	for i := range n {
		_, err := s.Create(ctx, fmt.Sprintf("app/%03d", i), &item{N: i, S: strings.Repeat("v", i%50)})
		require.NoError(t, err)
	}
	obj, err := s.Get(ctx, "app/001")
	require.NoError(t, err)
	_, err = s.Update(ctx, "app/001", &item{N: 1001, S: "updated"}, obj.Revision)
	require.NoError(t, err)
	obj, err = s.Get(ctx, "app/002")
	require.NoError(t, err)
	_, err = s.Delete(ctx, "app/002", obj.Revision)
	require.NoError(t, err)
}

// saved saves a snapshot of s and returns its bytes and Info.
func saved(t *testing.T, s store.Store[*item]) ([]byte, snapshot.Info) {
	t.Helper()
	var buf bytes.Buffer
	info, err := snapshot.Save(t.Context(), &buf, snapshot.Typed(s, nil))
	require.NoError(t, err)
	return buf.Bytes(), info
}

// prefixKeys counts the etcd keys under prefix, the identity record
// included.
func prefixKeys(t *testing.T, client *clientv3.Client, prefix string) int64 {
	t.Helper()
	resp, err := client.Get(t.Context(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	return resp.Count
}

// A prefix restored from a snapshot of memory (enough objects for several
// transactions), of another etcd prefix or of one served over HTTP holds
// the snapshot's keys and values under a new identity, with revisions of
// the restore; a watch after any revision the cluster had before the
// restore fails with ErrCompacted; a watch from the restore's revision
// sees the next write.
func TestARestoredPrefixHoldsTheSnapshotUnderANewIdentityAndOldRevisionsAreCompacted(t *testing.T) {
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	etcd := newStore(t, client, "source/")
	served := newStore(t, client, "served/")
	for name, tc := range map[string]struct {
		src store.Store[*item]
		n   int
	}{
		"memory":       {store.NewMemory[*item](), 350},
		"etcd":         {etcd, 20},
		"etcd on HTTP": {httpstoretest.Serve[*item](t, served, httpstoretest.Options{}), 20},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			fillItems(t, tc.src, tc.n)
			want, _, err := tc.src.List(ctx, "")
			require.NoError(t, err)
			data, info := saved(t, tc.src)
			before, err := etcd.Revision(ctx)
			require.NoError(t, err)

			prefix := "restored/" + strings.ReplaceAll(name, " ", "-") + "/"
			restored, err := etcdstore.Restore(ctx, client, prefix, bytes.NewReader(data))
			require.NoError(t, err)
			require.Equal(t, info, restored.Snapshot)
			s := newStore(t, client, prefix)
			objs, rev, err := s.List(ctx, "")
			require.NoError(t, err)
			require.GreaterOrEqual(t, rev, restored.Revision)
			require.Len(t, objs, len(want))
			for i, o := range objs {
				require.Equal(t, want[i].Key, o.Key)
				require.Equal(t, want[i].Value, o.Value)
				require.Greater(t, o.CreateRevision, before, "the restore's revisions")
				require.Less(t, o.Revision, restored.Revision, "written before the identity record")
			}
			id := identityOf(t, s)
			require.Equal(t, restored.Identity, id)
			require.NotEqual(t, info.Identity, id)

			olds := []int64{before, restored.Revision - 1}
			if info.Revision < restored.Revision {
				// A revision the cluster went past: compacted. One it did
				// not (a snapshot of a store with more revisions than the
				// cluster) is another store's: the identity says so.
				olds = append(olds, info.Revision)
			}
			for _, old := range olds {
				require.ErrorIs(t, watchFailure(t, s, old), store.ErrCompacted, "a watch after revision %d", old)
			}
			w, err := s.Watch(ctx, "", restored.Revision)
			require.NoError(t, err)
			defer w.Stop()
			later, err := s.Create(ctx, "later", &item{N: 1})
			require.NoError(t, err)
			require.Greater(t, later.Revision, restored.Revision)
			require.Equal(t, later, nextEvent(t, w).Object)
		})
	}
}

// Restore refuses a prefix that holds a key, or only the identity record
// of an emptied store, with ErrExists and changes nothing; a damaged
// snapshot writes nothing.
func TestRestoreRefusesAPrefixWithKeysAndADamagedSnapshotWritesNothing(t *testing.T) {
	ctx := t.Context()
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	src := store.NewMemory[*item]()
	fillItems(t, src, 5)
	data, _ := saved(t, src)

	used := newStore(t, client, "used/")
	obj, err := used.Create(ctx, "a", &item{N: 1})
	require.NoError(t, err)
	_, err = etcdstore.Restore(ctx, client, "used/", bytes.NewReader(data))
	require.ErrorIs(t, err, store.ErrExists)
	id := identityOf(t, used)
	_, err = used.Delete(ctx, "a", obj.Revision)
	require.NoError(t, err)
	_, err = etcdstore.Restore(ctx, client, "used/", bytes.NewReader(data))
	require.ErrorIs(t, err, store.ErrExists, "only the identity record")
	require.Equal(t, id, identityOf(t, used))
	require.Equal(t, int64(1), prefixKeys(t, client, "used/"))

	for n := 0; n < len(data); n += 1 + n/4 {
		_, err := etcdstore.Restore(ctx, client, "new/", bytes.NewReader(data[:n]))
		require.ErrorIs(t, err, snapshot.ErrDamaged)
		require.Zero(t, prefixKeys(t, client, "new/"))
	}
	_, err = etcdstore.Restore(ctx, client, "new", bytes.NewReader(data))
	require.ErrorIs(t, err, store.ErrInvalid, "a prefix without a slash")
	_, err = etcdstore.Restore(ctx, nil, "new/", bytes.NewReader(data))
	require.ErrorIs(t, err, store.ErrInvalid)
	_, err = etcdstore.Restore(ctx, client, "new/", nil)
	require.ErrorIs(t, err, store.ErrInvalid)
	//lint:ignore SA1012 a nil context is the bad input under test
	_, err = etcdstore.Restore(nil, client, "new/", bytes.NewReader(data))
	require.ErrorIs(t, err, store.ErrInvalid)
}

// A restore that did not finish leaves its mark: the prefix has no
// identity (ErrInvalid, saying why) and cannot be restored into again
// until it is deleted.
func TestARestoreThatDidNotFinishIsNoStore(t *testing.T) {
	ctx := t.Context()
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	_, err := client.Put(ctx, "half/", "restoring:WHATAFAILEDRESTORELEFT")
	require.NoError(t, err)
	_, err = client.Put(ctx, "half/a", "{}")
	require.NoError(t, err)
	_, err = newStore(t, client, "half/").Identity(ctx)
	require.ErrorIs(t, err, store.ErrInvalid)
	require.ErrorContains(t, err, "restore")

	src := store.NewMemory[*item]()
	fillItems(t, src, 3)
	data, _ := saved(t, src)
	_, err = etcdstore.Restore(ctx, client, "half/", bytes.NewReader(data))
	require.ErrorIs(t, err, store.ErrExists)
	_, err = client.Delete(ctx, "half/", clientv3.WithPrefix())
	require.NoError(t, err)
	_, err = etcdstore.Restore(ctx, client, "half/", bytes.NewReader(data))
	require.NoError(t, err)
	identityOf(t, newStore(t, client, "half/"))
}
