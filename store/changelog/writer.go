package changelog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/converge-go/converge/internal/atomicfile"
)

// writer appends records to the open segment of an epoch and syncs them
// in groups; it starts the next segment once one passes its size. It is
// used by one goroutine (a Shipper's Run).
type writer struct {
	dir      string
	f        *os.File
	size     int64 // bytes of the open segment
	identity string
	base     int64
	// last is the revision of the last record appended (or, before any,
	// the segment's Prev); keys are the keys appended at it.
	last int64
	keys map[string]bool
	// unsynced counts the bytes written since the last sync; synced is
	// the last revision on disk, at lastSync.
	unsynced int
	synced   int64
	lastSync time.Time
	buf      []byte
}

// createSegment makes the segment named for first of the store identity,
// with header h, synced with its directory, open for appending. A segment
// of that name that holds no record (a crash left it, or an epoch began
// and stopped before its first change) is replaced.
func createSegment(dir string, first int64, identity string, h header) (*os.File, int64, error) {
	path := filepath.Join(dir, segName(first, identity))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) && holdsNoRecord(path) {
		if err = os.Remove(path); err == nil {
			f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		}
	}
	if err != nil {
		return nil, 0, fmt.Errorf("changelog: new segment: %w", err)
	}
	frame := appendFrame(nil, encodeHeader(h))
	_, err = f.Write(frame)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = atomicfile.SyncDir(dir)
	}
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, 0, fmt.Errorf("changelog: new segment %s: %w", path, err)
	}
	return f, int64(len(frame)), nil
}

// holdsNoRecord reports whether the segment at path holds at most its
// header.
func holdsNoRecord(path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	h, err := readHeader(path)
	return err != nil || fi.Size() == int64(frameHead+len(encodeHeader(h)))
}

// newEpochWriter begins an epoch of the store identity after revision
// base, in a new segment.
func newEpochWriter(dir, identity string, base int64) (*writer, error) {
	f, size, err := createSegment(dir, base+1, identity, header{Identity: identity, Base: base, Prev: base, Time: time.Now().UTC()})
	if err != nil {
		return nil, err
	}
	return &writer{dir: dir, f: f, size: size, identity: identity, base: base, last: base, synced: base, keys: map[string]bool{}}, nil
}

// append writes r (whose revision is at least w.last) to the segment,
// first starting the next one if r begins a revision and the segment has
// segSize bytes or more. Records are written at once (a killed process
// leaves them to the system) and synced by sync.
func (w *writer) append(r Record, segSize int64) error {
	if r.Revision > w.last && w.size >= segSize {
		if err := w.rotate(r.Revision); err != nil {
			return err
		}
	}
	w.buf = appendFrame(w.buf[:0], encodeRecord(nil, r))
	if _, err := w.f.Write(w.buf); err != nil {
		return fmt.Errorf("changelog: write %s: %w", w.f.Name(), err)
	}
	w.size += int64(len(w.buf))
	w.unsynced += len(w.buf)
	if r.Revision > w.last {
		w.last = r.Revision
		clear(w.keys)
	}
	w.keys[r.Key] = true
	return nil
}

// rotate syncs and closes the open segment and starts the next, for
// records from revision first on.
func (w *writer) rotate(first int64) error {
	if err := w.sync(); err != nil {
		return err
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("changelog: close %s: %w", w.f.Name(), err)
	}
	f, size, err := createSegment(w.dir, first, w.identity, header{Identity: w.identity, Base: w.base, Prev: w.last, Time: time.Now().UTC()})
	if err != nil {
		return err
	}
	w.f, w.size = f, size
	return nil
}

// sync makes every record written so far durable.
func (w *writer) sync() error {
	if w.unsynced == 0 {
		w.synced = w.last
		return nil
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("changelog: sync %s: %w", w.f.Name(), err)
	}
	w.unsynced, w.synced, w.lastSync = 0, w.last, time.Now()
	return nil
}

// close syncs and closes the open segment.
func (w *writer) close() error {
	return errors.Join(w.sync(), w.f.Close())
}

// after returns the revision to resume the watch after: before the last
// revision if some of its keys are in the log (a revision of several keys
// may have been cut by the end of the last watch), else the last.
func (w *writer) after() int64 {
	if len(w.keys) > 0 {
		return w.last - 1
	}
	return w.last
}

// shipped reports whether r is in the log already (resuming before the
// last revision delivers its records again).
func (w *writer) shipped(r Record) bool {
	return r.Revision < w.last || (r.Revision == w.last && w.keys[r.Key])
}
