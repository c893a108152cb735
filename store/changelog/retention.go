package changelog

import (
	"os"

	"github.com/converge-go/converge/internal/atomicfile"
	"github.com/converge-go/converge/store/snapshot"
)

// retain removes the segments of the store identity that no restore
// point from its oldest snapshot in SnapshotDir on needs (removable). It
// runs when an epoch begins and when a segment is closed; a failure is
// logged and leaves more than needed.
func (sh *Shipper[T]) retain(identity string) {
	oldest, ok := oldestSnapshot(sh.opts.SnapshotDir, identity)
	if !ok {
		return
	}
	segs, err := listSegments(sh.opts.Dir)
	if err != nil {
		sh.log.Warn("change log: old segments not removed", "err", err)
		return
	}
	gone := removable(of(segs, identity), oldest)
	for _, s := range gone {
		if err := os.Remove(s.path); err != nil {
			sh.log.Warn("change log: old segment not removed", "err", err)
			return
		}
	}
	if len(gone) > 0 {
		if err := atomicfile.SyncDir(sh.opts.Dir); err != nil {
			sh.log.Warn("change log: sync the directory", "err", err)
		}
		sh.log.Info("change log: old segments removed", "dir", sh.opts.Dir, "removed", len(gone), "oldest snapshot", oldest)
	}
}

// oldestSnapshot returns the lowest revision of the snapshots of identity
// in dir whose header reads (damaged ones included: keeping the log from
// a lower revision keeps more, never less).
func oldestSnapshot(dir, identity string) (int64, bool) {
	files, _, err := snapshot.Files(dir)
	if err != nil {
		return 0, false
	}
	var oldest int64
	ok := false
	for _, f := range files {
		if f.Info.Identity == identity && (!ok || f.Info.Revision < oldest) {
			oldest, ok = f.Info.Revision, true
		}
	}
	return oldest, ok
}

// removable returns the segments of segs (one store's, in order) that a
// restore onto a snapshot at revision oldest or above never reads: the
// longest run from the first whose every record is at or below oldest,
// as the next segment's header says (its Prev: the last revision before
// it). The last segment is never removable, nor one next to a segment
// whose header cannot be read.
func removable(segs []segment, oldest int64) []segment {
	var out []segment
	for i := 0; i+1 < len(segs); i++ {
		next := segs[i+1]
		if next.err != nil || next.hdr.Prev > oldest {
			break
		}
		out = append(out, segs[i])
	}
	return out
}
