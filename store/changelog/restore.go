package changelog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/snapshot"
)

// Target is the point a restore brings a store back to: a Revision, a
// Time, or neither (the zero Target): the last revision the log holds.
type Target struct {
	// Revision restores the state the store had at this revision: every
	// change up to it, none after it.
	Revision int64
	// Time restores the state the log had shipped at this time: every
	// revision whose changes the shipper received at or before it (by the
	// records' Time), none after.
	Time time.Time
}

// Archive is where the changes and snapshots of a store are kept: what a
// restore reads.
type Archive struct {
	// Dir is the log's directory (Options.Dir of its Shipper). Required.
	Dir string
	// SnapshotDirs are the directories of the store's snapshots (Dir if
	// none): its Shipper's SnapshotDir, its snapshot.Saver's.
	SnapshotDirs []string
	// Identity is the store whose log to read; "" chooses the store of the
	// segment with the highest revision in Dir (the last one shipped).
	Identity string
}

// Point says what State built, and from what.
type Point struct {
	// Identity is the store's whose log was read.
	Identity string
	// Revision is the revision of the state built.
	Revision int64
	// Snapshot is the snapshot file the state starts from, at revision
	// SnapshotRevision, and Records the number of records applied on it.
	Snapshot         string
	SnapshotRevision int64
	Records          int
	// Last is the last revision the log holds (of its last epoch).
	Last int64
	// Torn, if not nil, says the log ends in a torn record (it matches
	// ErrTorn): the change it held was never whole on disk.
	Torn error
}

// State returns the state of the store at to, in the snapshot format
// (store/snapshot), for a restore to read as any snapshot:
// boltstore.Restore, etcdstore.Restore. It builds the state from the
// snapshot of the store with the highest revision at or below the
// point's, and the records of the log after it up to the point, both in
// the point's epoch (see the package doc): the whole state is held in
// memory.
//
// It fails with an error matching ErrGap for a point the log does not
// cover (before its first epoch, past its last revision, in a gap between
// two epochs), snapshot.ErrNoSnapshot if no snapshot of the point's epoch
// is at or below it, ErrDamaged (ErrTorn) for a point past damage in its
// epoch (past a torn tail), ErrNoLog for a Dir without a segment of the
// store, store.ErrInvalid for a negative revision, a Target of both a
// revision and a time, or an empty Dir, and the file system's errors.
func (a Archive) State(ctx context.Context, to Target) (io.Reader, Point, error) {
	if a.Dir == "" || to.Revision < 0 || (to.Revision != 0 && !to.Time.IsZero()) {
		return nil, Point{}, fmt.Errorf("changelog: %w: restore from %q to revision %d, time %v", store.ErrInvalid, a.Dir, to.Revision, to.Time)
	}
	segs, id, err := a.segments()
	if err != nil {
		return nil, Point{}, err
	}
	p := Point{Identity: id}
	w := walkLog(segs, nil)
	if w.end != nil && !errors.Is(w.end, ErrTorn) {
		return nil, p, w.end
	}
	p.Last, p.Torn = w.last(), w.end
	if !to.Time.IsZero() {
		if to.Revision, err = revisionAt(segs, to.Time); err != nil {
			return nil, p, err
		}
	}
	e, err := w.epochOf(to.Revision)
	if err != nil {
		return nil, p, err
	}
	p.Revision = to.Revision
	if p.Revision == 0 {
		p.Revision = w.epochs[e].last
	}
	objs, err := a.replay(segs, w.epochs[e], e, &p)
	if err != nil && e == 0 && w.lost != nil {
		// The log's start was lost to damage.
		err = fmt.Errorf("%w; the log before revision %d is damaged: %w", err, w.epochs[0].start, w.lost)
	}
	if err != nil {
		return nil, p, err
	}
	var buf bytes.Buffer
	if _, err := snapshot.Save(ctx, &buf, snapshot.State(p.Identity, p.Revision, objs)); err != nil {
		return nil, p, err
	}
	return bytes.NewReader(buf.Bytes()), p, nil
}

// segments returns the segments of the store to restore, and its
// identity.
func (a Archive) segments() ([]segment, string, error) {
	all, err := listSegments(a.Dir)
	if err != nil {
		return nil, "", err
	}
	id := a.Identity
	if id == "" {
		for i := len(all) - 1; i >= 0; i-- {
			if all[i].err == nil {
				id = all[i].hdr.Identity
				break
			}
		}
	}
	own := of(all, id)
	if len(own) == 0 {
		return nil, "", fmt.Errorf("%w of identity %q in %s", ErrNoLog, id, a.Dir)
	}
	return own, id, nil
}

// epochOf returns the index of the epoch that holds revision rev (0: the
// last revision of the log).
func (w *walk) epochOf(rev int64) (int, error) {
	if len(w.epochs) == 0 {
		return 0, fmt.Errorf("%w: no segment reads: %w", ErrGap, w.errs())
	}
	last := len(w.epochs) - 1
	if rev == 0 {
		if d := w.epochs[last].damage; d != nil {
			return 0, fmt.Errorf("changelog: the log's last revision is past damage: %w", d)
		}
		return last, nil
	}
	for i := last; i >= 0; i-- {
		ep := w.epochs[i]
		switch {
		case ep.start <= rev && rev <= ep.last:
			return i, nil
		case ep.damage != nil && ep.start <= rev && (i == last || rev < w.epochs[i+1].base):
			return 0, fmt.Errorf("changelog: revision %d is past damage in the log: %w", rev, ep.damage)
		}
	}
	err := fmt.Errorf("%w: revision %d; the log holds %s", ErrGap, rev, w.cover())
	if rev > w.last() && w.end != nil {
		err = fmt.Errorf("%w: %w", err, w.end)
	}
	return 0, err
}

// cover says which revisions the log holds.
func (w *walk) cover() string {
	s := ""
	for i, ep := range w.epochs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d to %d", ep.start, ep.last)
	}
	return s
}

// revisionAt returns the last revision whose records were all received
// at or before t, or the Prev of a segment made at or before t, if
// higher: the store was at Prev when the segment was made.
func revisionAt(segs []segment, t time.Time) (int64, error) {
	var done, open int64
	stopAt := int64(math.MaxInt64)
	stop := errors.New("stop")
	w := walkLog(segs, func(_ int, r Record) error {
		if r.Time.After(t) {
			if r.Revision == open {
				open = done
			}
			stopAt = r.Revision
			return stop
		}
		if r.Revision != open {
			done, open = open, r.Revision
		}
		return nil
	})
	if w.end != nil && w.end != stop && !errors.Is(w.end, ErrTorn) {
		return 0, w.end
	}
	found := open > 0
	for _, s := range segs {
		if s.err == nil && !s.hdr.Time.After(t) && s.hdr.Prev < stopAt {
			open, found = max(open, s.hdr.Prev), true
		}
	}
	if !found {
		return 0, fmt.Errorf("%w: the log began after %v", ErrGap, t)
	}
	return open, nil
}
