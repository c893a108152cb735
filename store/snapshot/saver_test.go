package snapshot_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/snapshot"
	"github.com/stretchr/testify/require"
)

// revisions returns the revisions of the good snapshots in dir, newest
// first.
func revisions(t *testing.T, dir string) []int64 {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*"+snapshot.Ext))
	require.NoError(t, err)
	var revs []int64
	for _, p := range paths {
		info, err := snapshot.CheckFile(p)
		require.NoError(t, err)
		revs = append(revs, info.Revision)
	}
	slices.Sort(revs)
	slices.Reverse(revs)
	return revs
}

// run starts s.Run in the bubble and returns a function that stops it
// and returns Run's error.
func run(t *testing.T, s *snapshot.Saver) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	return func() error {
		cancel()
		return <-done
	}
}

// A Saver saves a snapshot at once and then, every interval, only if the
// store's revision moved; it keeps the newest Keep; run again, it saves
// nothing until the store moves past its newest snapshot; it returns nil
// when its context ends.
func TestSaverSavesOnlyWhenTheRevisionMovedAndKeepsTheNewest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		dir := filepath.Join(t.TempDir(), "snapshots")
		m := store.NewMemory[[]byte]()
		_, err := m.Create(ctx, "a", []byte("{}"))
		require.NoError(t, err)
		s, err := snapshot.NewSaver(snapshot.Bytes(m), snapshot.SaverOptions{Dir: dir, Every: time.Minute, Keep: 3})
		require.NoError(t, err)
		stop := run(t, s)
		synctest.Wait()
		require.Equal(t, []int64{1}, revisions(t, dir), "a snapshot at once")

		time.Sleep(time.Minute) // the bubble's fake clock
		synctest.Wait()
		require.Equal(t, []int64{1}, revisions(t, dir), "none while the store stands still")

		for i := range 4 {
			_, err := m.Create(ctx, fmt.Sprint("k", i), []byte("{}"))
			require.NoError(t, err)
			time.Sleep(time.Minute)
			synctest.Wait()
		}
		require.Equal(t, []int64{5, 4, 3}, revisions(t, dir), "one per interval that moved, the newest 3 kept")
		require.NoError(t, stop())

		stop = run(t, s)
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Equal(t, []int64{5, 4, 3}, revisions(t, dir), "run again, nothing new to save")
		_, err = m.Create(ctx, "later", []byte("{}"))
		require.NoError(t, err)
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Equal(t, []int64{6, 5, 4}, revisions(t, dir))
		require.NoError(t, stop())
	})
}

// down is a store that fails every call while its flag is set.
type down struct {
	store.Store[[]byte]
	down atomic.Bool
}

func (d *down) List(ctx context.Context, prefix string) ([]store.Object[[]byte], int64, error) {
	if d.down.Load() {
		return nil, 0, fmt.Errorf("%w: down", store.ErrUnavailable)
	}
	return d.Store.List(ctx, prefix)
}

func (d *down) Revision(ctx context.Context) (int64, error) {
	if d.down.Load() {
		return 0, fmt.Errorf("%w: down", store.ErrUnavailable)
	}
	return d.Store.Revision(ctx)
}

// lockedBuffer is a log sink safe for the Saver's goroutine and the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A save that fails (the store unreachable) is logged and tried again at
// the next interval; the Saver goes on.
func TestSaverGoesOnAfterAFailedSave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		dir := t.TempDir()
		d := &down{Store: store.NewMemory[[]byte]()}
		_, err := d.Create(ctx, "a", []byte("{}"))
		require.NoError(t, err)
		d.down.Store(true)
		var logs lockedBuffer
		s, err := snapshot.NewSaver(snapshot.Bytes(d), snapshot.SaverOptions{Dir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		require.NoError(t, err)
		stop := run(t, s)
		synctest.Wait()
		require.Empty(t, revisions(t, dir))
		require.Contains(t, logs.String(), "snapshot not saved")

		d.down.Store(false)
		time.Sleep(snapshot.DefaultEvery)
		synctest.Wait()
		require.Equal(t, []int64{1}, revisions(t, dir))
		require.Equal(t, 1, strings.Count(logs.String(), "snapshot saved"))
		require.NoError(t, stop())
	})
}

// NewSaver refuses a nil source, no directory and negative values with
// store.ErrInvalid.
func TestNewSaverRefusesBadOptions(t *testing.T) {
	src := snapshot.Bytes(store.NewMemory[[]byte]())
	for name, tc := range map[string]struct {
		src  snapshot.Source
		opts snapshot.SaverOptions
	}{
		"nil source":     {nil, snapshot.SaverOptions{Dir: "d"}},
		"no directory":   {src, snapshot.SaverOptions{}},
		"negative every": {src, snapshot.SaverOptions{Dir: "d", Every: -1}},
		"negative keep":  {src, snapshot.SaverOptions{Dir: "d", Keep: -1}},
	} {
		_, err := snapshot.NewSaver(tc.src, tc.opts)
		require.ErrorIs(t, err, store.ErrInvalid, name)
	}
}
