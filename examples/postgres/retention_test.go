package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/intent"
	"github.com/converge-go/converge/reconcile/kit/schedule"
	"github.com/converge-go/converge/store"
)

// retentionWorld is a random archive and its base backups: segment i
// (1..n) holds the WAL written in (end[i-1], end[i]].
type retentionWorld struct {
	end     []time.Time // end[0] is the archive's start
	present map[int]bool
	runs    []baseRun
	start   map[string]int // a backup's first segment
}

func segName(i int) string { return fmt.Sprintf("%08X%08X%08X", 1, 0, i) }

func randomRetentionWorld(rng *rand.Rand) retentionWorld {
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	n := 3 + rng.IntN(30)
	w := retentionWorld{present: map[int]bool{}, start: map[string]int{}}
	for i := 0; i <= n; i++ {
		w.end = append(w.end, t0.Add(time.Duration(i)*time.Minute))
		if i > 0 {
			w.present[i] = rng.IntN(10) > 0 // a segment or two lost
		}
	}
	for k := range rng.IntN(9) {
		s := 1 + rng.IntN(n)
		r := s + rng.IntN(n-s+1) // its restore point is in segment r
		run := baseRun{Key: fmt.Sprintf("b%d", k), Own: rng.IntN(5) > 0, Finished: rng.IntN(10) > 0,
			Ready: w.end[r-1].Add(time.Duration(1+rng.IntN(59)) * time.Second), StartWAL: segName(s)}
		run.Verified = run.Finished && rng.IntN(10) > 2
		w.runs = append(w.runs, run)
		w.start[run.Key] = s
	}
	return w
}

// segmentAt is the segment holding instant t.
func (w retentionWorld) segmentAt(t time.Time) int {
	for i := 1; i < len(w.end); i++ {
		if !w.end[i].Before(t) {
			return i
		}
	}
	return len(w.end) - 1
}

// restorable: some verified backup not deleted has its restore point at or
// before t, and every segment from its first to t's is present.
func (w retentionWorld) restorable(t time.Time, deleted []string, present map[int]bool) bool {
	for _, r := range w.runs {
		if !r.Verified || slices.Contains(deleted, r.Key) || r.Ready.After(t) {
			continue
		}
		ok := true
		for i := w.start[r.Key]; i <= w.segmentAt(t); i++ {
			ok = ok && present[i]
		}
		if ok {
			return true
		}
	}
	return false
}

// Retention never breaks a restore point inside its window: for random
// backups (verified or not, finished or not, the schedule's or others'),
// archives with holes, windows and counts to keep, every instant from the
// window's start on that could be restored before retention can be
// restored after it; only the schedule's finished backups are deleted,
// and only segments of the archive removed.
func TestRetentionNeverBreaksARestorePointInsideItsWindow(t *testing.T) {
	seed := uint64(envInt(t, "POSTGRES_RETENTION_SEED", int(time.Now().UnixNano())))
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 40))
	var deletedRuns, removedSegs int
	for range 3000 {
		w := randomRetentionWorld(rng)
		var segs []string
		for i := 1; i < len(w.end); i++ {
			if w.present[i] {
				segs = append(segs, segName(i))
			}
		}
		last := w.end[len(w.end)-1]
		windowStart := w.end[0].Add(time.Duration(rng.Int64N(int64(last.Sub(w.end[0])) + 1)))
		keepVerified, keepFailed := rng.IntN(3), rng.IntN(3)
		dec := retainBase(w.runs, segs, windowStart, keepVerified, keepFailed)

		after := map[int]bool{}
		for i, p := range w.present {
			after[i] = p && !slices.Contains(dec.Segments, segName(i))
		}
		for _, s := range dec.Segments {
			require.Contains(t, segs, s)
		}
		for _, k := range dec.Expired {
			i := slices.IndexFunc(w.runs, func(r baseRun) bool { return r.Key == k })
			require.True(t, w.runs[i].Own && w.runs[i].Finished, "%s deleted: not the schedule's or not finished", k)
		}
		for at := windowStart; !at.After(last); at = at.Add(7 * time.Second) {
			if w.restorable(at, nil, w.present) {
				require.True(t, w.restorable(at, dec.Expired, after), "seed %d: %v restorable before retention, not after: runs %+v, window from %v, keep %d %d, decided %+v",
					seed, at, w.runs, windowStart, keepVerified, keepFailed, dec)
			}
		}
		deletedRuns += len(dec.Expired)
		removedSegs += len(dec.Segments)
	}
	t.Logf("%d backups deleted, %d segments removed", deletedRuns, removedSegs)
	require.Positive(t, deletedRuns, "retention deleted nothing: the test proved nothing")
	require.Positive(t, removedSegs, "retention removed no segment: the test proved nothing")
}

// A base-backup schedule's retention, over real files: the schedule's
// verified backup older than the one that restores its window's start is
// deleted, and the archive loses only the segments before the first one a
// kept backup needs, another schedule's (or a hand-made) backup included,
// each backup's first segment read from its own backup_label; the
// schedule's status names its newest verified restore point.
func TestBaseRetentionRemovesOnlyTheSegmentsNoKeptBackupNeeds(t *testing.T) {
	ctx := t.Context()
	dir, archiveDir := t.TempDir(), t.TempDir()
	for i := 1; i <= 10; i++ {
		require.NoError(t, os.WriteFile(filepath.Join(archiveDir, segName(i)), nil, 0o600))
	}
	archive, err := newWALArchive(archiveDir)
	require.NoError(t, err)
	backups := store.NewMemory[*Backup]()
	now := time.Now().UTC()
	put := func(key string, ready time.Duration, start int) store.Object[*Backup] {
		b := &Backup{Spec: BackupSpec{Database: "app", Method: MethodBase}}
		b.Status = BackupStatus{Phase: BackupSucceeded, Dump: intent.Record[DumpResult]{ID: "forged", Generation: 1, Attempt: 1, Done: true,
			Result: DumpResult{OK: true, Base: &BaseResult{Verified: true, RestorePointTime: now.Add(-ready), StartWAL: segName(99)}}}}
		obj, err := backups.Create(ctx, key, b)
		require.NoError(t, err)
		base := baseDir(dir, intent.ID(key, obj.CreateRevision, 1, 1))
		require.NoError(t, os.MkdirAll(base, 0o700))
		label := fmt.Sprintf("START WAL LOCATION: 0/%X (file %s)\n", start<<24, segName(start))
		require.NoError(t, os.WriteFile(filepath.Join(base, "backup_label"), []byte(label), 0o600))
		return obj
	}
	b1, b2, b3 := put("backups/s/1", 3*time.Hour, 4), put("backups/s/2", 2*time.Hour, 6), put("backups/s/3", 10*time.Minute, 9)
	put("backups/by-hand", 4*time.Hour, 3)
	var children []childRun
	var objs []store.Object[*Backup]
	for _, o := range []store.Object[*Backup]{b1, b2, b3} {
		children = append(children, childRun{Run: schedule.Run{Key: o.Key, Finished: true, Succeeded: true}})
		objs = append(objs, o)
	}
	r := &scheduleReconciler{backups: backups, archive: archive, dir: dir}
	expired, err := r.baseRetentionOf(ctx, BackupScheduleSpec{Method: MethodBase, RecoveryWindow: "1h"}, children, now)
	require.NoError(t, err)
	require.Len(t, expired, 1)
	require.Equal(t, "backups/s/1", expired[0].Key, "the backup before the one restoring the window's start")
	segs, err := archive.segments()
	require.NoError(t, err)
	require.Equal(t, segName(3), segs[0], "the hand-made backup's WAL is kept; a status's StartWAL is never read")
	require.Len(t, segs, 8)

	last := lastVerified(verifiedChildren(objs, children))
	require.Equal(t, "backups/s/3", last.Backup)
	require.Equal(t, now.Add(-10*time.Minute), last.RestorePoint)
}
