package etcdstore_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/converge-go/converge/store/snapshot"
	"github.com/converge-go/converge/store/snapshot/snapshottest"
	"github.com/stretchr/testify/require"
)

// layerCheck is the check a store server serving JSON objects through
// apistore's JSONKind gives a restore.
var layerCheck = snapshot.Decodes[json.RawMessage](store.JSON[json.RawMessage]{}, func(v json.RawMessage) error {
	_, err := apistore.JSONKind{}.Meta(v)
	return err
})

// A restore given the check of the layer that will serve the prefix
// refuses a snapshot holding a value that layer cannot read (not JSON,
// JSON but no object, metadata that does not decode): the error matches
// snapshot.ErrUnservable and store.ErrInvalid and names the key, and
// nothing is written under the prefix. Without the check the same
// snapshot restores.
func TestARestoreRefusesAValueItsLayerCannotReadNamingTheKey(t *testing.T) {
	ctx := t.Context()
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	i := 0
	for name, bad := range map[string]string{
		"not JSON":                    `not json`,
		"JSON but no object":          `42`,
		"metadata that do not decode": `{"metadata":{"finalizers":"one"},"spec":{}}`,
	} {
		var buf bytes.Buffer
		require.NoError(t, snapshottest.Write(&buf, snapshottest.Header{Identity: "bolt:A", Revision: 3},
			snapshottest.Object("app/a", `{"spec":{"n":1}}`, 1),
			snapshottest.Object("app/bad", bad, 2),
			snapshottest.Object("app/c", `{"spec":{}}`, 3)))
		i++
		prefix := fmt.Sprintf("p%d/", i)
		_, err := etcdstore.Restore(ctx, client, prefix, bytes.NewReader(buf.Bytes()), etcdstore.WithValueCheck(layerCheck))
		require.ErrorIs(t, err, snapshot.ErrUnservable, name)
		require.ErrorIs(t, err, store.ErrInvalid, name)
		require.ErrorContains(t, err, `"app/bad"`, name)
		require.Zero(t, prefixKeys(t, client, prefix), name)
		_, err = etcdstore.Restore(ctx, client, prefix, bytes.NewReader(buf.Bytes()))
		require.NoError(t, err, name)
	}
}

// The revisions of a snapshot restored into etcd are the cluster's, not
// the snapshot's: a snapshot at any revision, the largest an int64 holds
// included, restores, and the prefix takes writes at growing positive
// revisions. (A bbolt restore keeps the snapshot's revision and refuses
// one that leaves no room: boltstore's
// TestARestoreRefusesARevisionThatLeavesNoRoomNamingIt.)
func TestARestoreIntoEtcdGoesOnFromTheClustersRevisionWhateverTheSnapshots(t *testing.T) {
	ctx := t.Context()
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	for i, rev := range []int64{snapshot.MaxRevision + 1, math.MaxInt64 - 2, math.MaxInt64} {
		var buf bytes.Buffer
		require.NoError(t, snapshottest.Write(&buf, snapshottest.Header{Identity: "bolt:A", Revision: rev},
			snapshottest.Object("app/a", `{"n":1}`, rev)))
		prefix := fmt.Sprintf("r%d/", i)
		restored, err := etcdstore.Restore(ctx, client, prefix, bytes.NewReader(buf.Bytes()))
		require.NoError(t, err, rev)
		require.Less(t, restored.Revision, int64(1000), rev)
		s := newStore(t, client, prefix)
		last := restored.Revision
		for k := range 3 {
			o, err := s.Create(ctx, fmt.Sprint("new/", k), &item{N: k})
			require.NoError(t, err, rev)
			require.Greater(t, o.Revision, last, rev)
			last = o.Revision
		}
	}
}
