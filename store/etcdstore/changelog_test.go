package etcdstore_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/converge-go/converge/store/changelog"
	"github.com/converge-go/converge/store/changelog/changelogtest"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/stretchr/testify/require"
)

// TestAWriteAcknowledgedBeforeTheDiskWasLostIsRestored: writers load an
// etcd store whose changes a Shipper, a client of it, ships; the cluster
// is lost mid-load (the log's and snapshots' disk holds what it held at
// that moment), and the store restored from snapshot and log into another
// cluster holds every write acknowledged more than a second before the
// loss, under a new identity.
func TestAWriteAcknowledgedBeforeTheDiskWasLostIsRestored(t *testing.T) {
	dir := t.TempDir()
	logDir, snaps := filepath.Join(dir, "log"), filepath.Join(dir, "snapshots")
	lost := startServer(t, nil)
	s, err := etcdstore.New[[]byte](newClient(t, nil, lost.Endpoint()), "app/")
	require.NoError(t, err)
	identity, err := s.Identity(t.Context())
	require.NoError(t, err)
	sh, err := changelog.NewShipper(s, nil, changelog.Options{Dir: logDir, SnapshotDir: snaps, SegmentSize: 64 << 10})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	shipped := make(chan error, 1)
	go func() { shipped <- sh.Run(ctx) }()
	loadCtx, stopLoad := context.WithCancel(ctx)
	loaded := make(chan []changelogtest.Acked[[]byte], 1)
	go func() {
		loaded <- changelogtest.Load(loadCtx, s, 4, func(key string) []byte { return []byte(`"value of ` + key + `"`) })
	}()
	<-time.After(1500 * time.Millisecond) // real time: the load runs

	// The cluster is lost: the log's disk holds what it holds now.
	killed, synced := time.Now(), sh.Synced()
	lostLog, lostSnaps := filepath.Join(dir, "log-at-loss"), filepath.Join(dir, "snapshots-at-loss")
	require.NoError(t, os.CopyFS(lostLog, os.DirFS(logDir)))
	require.NoError(t, os.CopyFS(lostSnaps, os.DirFS(snaps)))
	stopLoad()
	acked := <-loaded
	cancel()
	require.NoError(t, <-shipped)

	r, p, err := changelog.Archive{Dir: lostLog, SnapshotDirs: []string{lostSnaps}}.State(t.Context(), changelog.Target{})
	require.NoError(t, err)
	require.Equal(t, identity, p.Identity)
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	restored, err := etcdstore.Restore(t.Context(), client, "app/", r)
	require.NoError(t, err)
	require.NotEqual(t, identity, restored.Identity)
	rs, err := etcdstore.New[[]byte](client, "app/")
	require.NoError(t, err)
	objs, _, err := rs.List(t.Context(), "")
	require.NoError(t, err)
	changelogtest.RequireRecoveryPoint(t, acked, killed, time.Second, objs, bytes.Equal)
	n, oldest := changelogtest.Unsynced(acked, killed, synced)
	t.Logf("not yet synced at the loss (what a power failure would also lose): %d writes, the oldest acknowledged %v before it", n, oldest)
}
