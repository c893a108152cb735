package boltstore_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/changelog"
	"github.com/converge-go/converge/store/changelog/changelogtest"
	"github.com/stretchr/testify/require"
)

// TestAWriteAcknowledgedBeforeTheDiskWasLostIsRestored: writers load a
// bolt store whose changes a Shipper ships; the store's disk is lost
// mid-load (the log's and snapshots' disk holds what it held at that
// moment, the store file is gone), and the store restored from snapshot
// and log holds every write acknowledged more than a second before the
// loss, under a new identity above every old revision.
func TestAWriteAcknowledgedBeforeTheDiskWasLostIsRestored(t *testing.T) {
	dir := t.TempDir()
	logDir, snaps, path := filepath.Join(dir, "log"), filepath.Join(dir, "snapshots"), filepath.Join(dir, "store.db")
	s, err := boltstore.Open[[]byte](path)
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
		loaded <- changelogtest.Load(loadCtx, s, 4, func(key string) []byte { return []byte("value of " + key) })
	}()
	<-time.After(1500 * time.Millisecond) // real time: the load runs

	// The disk is lost: the log's disk holds what it holds now.
	killed, synced := time.Now(), sh.Synced()
	lostLog, lostSnaps := filepath.Join(dir, "log-at-loss"), filepath.Join(dir, "snapshots-at-loss")
	require.NoError(t, os.CopyFS(lostLog, os.DirFS(logDir)))
	require.NoError(t, os.CopyFS(lostSnaps, os.DirFS(snaps)))
	stopLoad()
	acked := <-loaded
	cancel()
	require.NoError(t, <-shipped)
	lastRev, err := s.Revision(t.Context())
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, os.Remove(path))

	r, p, err := changelog.Archive{Dir: lostLog, SnapshotDirs: []string{lostSnaps}}.State(t.Context(), changelog.Target{})
	require.NoError(t, err)
	require.Equal(t, identity, p.Identity)
	restoredPath := filepath.Join(dir, "restored.db")
	restored, err := boltstore.Restore(restoredPath, r)
	require.NoError(t, err)
	require.NotEqual(t, identity, restored.Identity)
	require.Greater(t, restored.Revision, lastRev, "above every revision of the lost store")
	rs, err := boltstore.Open[[]byte](restoredPath)
	require.NoError(t, err)
	defer rs.Close()
	objs, _, err := rs.List(t.Context(), "")
	require.NoError(t, err)
	changelogtest.RequireRecoveryPoint(t, acked, killed, time.Second, objs, bytes.Equal)
	n, oldest := changelogtest.Unsynced(acked, killed, synced)
	t.Logf("not yet synced at the loss (what a power failure would also lose): %d writes, the oldest acknowledged %v before it", n, oldest)
}
