package changelog_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/changelog"
	"github.com/stretchr/testify/require"
)

// TestBadInputIsErrInvalidAndChangesNothing: a Shipper of no store, of no
// directory or with negative options, and a restore of no directory, to a
// negative revision or to both a revision and a time, are refused with
// store.ErrInvalid; a directory without a log is ErrNoLog.
func TestBadInputIsErrInvalidAndChangesNothing(t *testing.T) {
	s := store.NewMemory[[]byte]()
	defer s.Close()
	dir := t.TempDir()
	for name, opts := range map[string]changelog.Options{
		"no directory":          {},
		"negative sync every":   {Dir: dir, SyncEvery: -1},
		"negative sync bytes":   {Dir: dir, SyncBytes: -1},
		"negative segment size": {Dir: dir, SegmentSize: -1},
	} {
		_, err := changelog.NewShipper(s, nil, opts)
		require.ErrorIs(t, err, store.ErrInvalid, name)
	}
	_, err := changelog.NewShipper[[]byte](nil, nil, changelog.Options{Dir: dir})
	require.ErrorIs(t, err, store.ErrInvalid)
	for name, tc := range map[string]struct {
		a  changelog.Archive
		to changelog.Target
	}{
		"no directory":          {changelog.Archive{}, changelog.Target{}},
		"a negative revision":   {changelog.Archive{Dir: dir}, changelog.Target{Revision: -1}},
		"a revision and a time": {changelog.Archive{Dir: dir}, changelog.Target{Revision: 1, Time: time.Now()}},
	} {
		_, _, err := tc.a.State(t.Context(), tc.to)
		require.ErrorIs(t, err, store.ErrInvalid, name)
	}
	_, _, err = changelog.Archive{Dir: dir}.State(t.Context(), changelog.Target{})
	require.ErrorIs(t, err, changelog.ErrNoLog)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)
}

// TestAShipperRefusesALogDirectoryOthersMayChange: a log directory group
// or others may write is refused (internal/privatefile's rule: what a
// restore reads there could have been planted), unless
// InsecurePermissions accepts it.
func TestAShipperRefusesALogDirectoryOthersMayChange(t *testing.T) {
	s := store.NewMemory[[]byte]()
	defer s.Close()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o777))
	sh, err := changelog.NewShipper(s, nil, changelog.Options{Dir: dir})
	require.NoError(t, err)
	err = sh.Run(t.Context())
	require.ErrorContains(t, err, "chmod 700")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing written")

	sh, err = changelog.NewShipper(s, nil, changelog.Options{Dir: dir, InsecurePermissions: true})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- sh.Run(ctx) }()
	require.Eventually(t, func() bool {
		entries, _ := os.ReadDir(dir)
		return len(entries) >= 2 // the epoch's snapshot and segment
	}, 10*time.Second, 5*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}
