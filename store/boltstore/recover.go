package boltstore

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/converge-go/converge/internal/atomicfile"
	"github.com/converge-go/converge/store/snapshot"
)

// Recovery is what OpenOrRecover did. Its zero value (Recovered false)
// says the file opened as it was.
type Recovery struct {
	// Recovered: the file was damaged, and a snapshot was restored in its
	// place.
	Recovered bool
	// Damage is why Open refused the file (an error matching ErrCorrupt).
	Damage error
	// DamagedFile is where the damaged file is now: its path followed by
	// ".damaged-" and the time of the recovery (UTC). It is never deleted.
	DamagedFile string
	// Identity is the damaged file's identity, when it could still be
	// read; "" when it could not.
	Identity string
	// Snapshot is the snapshot file restored: the one named, or the one
	// chosen for Identity in the directory named (snapshot.LatestAtMost
	// the damaged file's revision, when it can be read). Skipped are the
	// damaged snapshots passed over for it, Foreign the snapshots of other
	// identities, Above those of Identity above the damaged file's
	// revision (another history of the store).
	Snapshot string
	Skipped  []snapshot.Skipped
	Foreign  []snapshot.File
	Above    []snapshot.File
	// Restored is what the restore made: the snapshot's Info, the new
	// store's identity and revision (see Restore).
	Restored snapshot.Restored
	// LastRevision is the damaged file's revision, when it could still be
	// read (LastRevisionKnown): see Lost.
	LastRevision      int64
	LastRevisionKnown bool
}

// SameStore reports whether the snapshot restored is known to be of the
// damaged store: the damaged file's identity could be read, and is the
// snapshot's. Only a snapshot named by its file is restored otherwise.
func (r Recovery) SameStore() bool {
	return r.Identity != "" && r.Identity == r.Restored.Snapshot.Identity
}

// Lost returns the revisions the damaged file held past the snapshot, the
// writes the recovery lost: from the snapshot's revision + 1 through
// LastRevision (none when from > through). ok is false when the damaged
// file's revision could not be read, or the snapshot is not known to be of
// the damaged store (SameStore): the revisions of two stores do not
// compare.
func (r Recovery) Lost() (from, through int64, ok bool) {
	return r.Restored.Snapshot.Revision + 1, r.LastRevision, r.LastRevisionKnown && r.SameStore()
}

// OpenOrRecover opens the store at path as Open does and, if the file is
// damaged (Open fails with ErrCorrupt), recovers it from a snapshot: from,
// if it is a snapshot file, named, whatever its identity; if from is a
// directory, the snapshot of the damaged store there, chosen by identity,
// then revision, never by the clock (snapshot.LatestAtMost with the
// damaged file's identity and, when it can be read, its revision: a
// snapshot above it is of another history of the store). It restores the
// snapshot into a new file beside path (Restore, with opts'
// WithRevisionBump and WithValueCheck), moves the damaged file aside
// (renamed to Recovery.DamagedFile, never deleted), puts the restored file
// at path, and opens it. Recovery reports what it
// did; for a file that opened as it was, it is zero.
//
// The recovered store is the snapshot's, under the rule of Restore: a new
// identity, revisions above the snapshot's plus the bump, everything
// before compacted. The writes after the snapshot are lost; Recovery.Lost
// says which, when the damaged file still tells its revision.
//
// Without a snapshot of the damaged store in the directory (none good:
// snapshot.ErrNoSnapshot; only snapshots of other identities, or the
// damaged file's identity unreadable: snapshot.ErrIdentity, and a snapshot
// of another store is restored only when named by its file; a missing
// from: fs.ErrNotExist), or if the restore fails, the damaged file is left
// where it is, and the error matches ErrCorrupt and the cause. Any other
// error of Open (ErrLocked, ErrFormat, invalid options) is returned as it
// is, with nothing recovered. While it recovers, it holds the damaged
// file's lock, so that of two processes recovering one file, one does.
func OpenOrRecover[T any](path, from string, opts ...Option) (*Store[T], Recovery, error) {
	s, err := Open[T](path, opts...)
	if err == nil || !errors.Is(err, ErrCorrupt) {
		return s, Recovery{}, err
	}
	if st, serr := os.Lstat(path); serr != nil || !st.Mode().IsRegular() {
		return nil, Recovery{}, err
	}
	_, cfg, _ := newConfig[T](opts) // checked by Open
	rec, rerr := recoverFile(path, from, cfg)
	rec.Damage = err
	if rerr != nil {
		return nil, rec, fmt.Errorf("boltstore: %s not recovered: %w; %w", path, rerr, err)
	}
	if s, err = Open[T](path, opts...); err != nil {
		return nil, rec, fmt.Errorf("boltstore: open %s restored from %s: %w", path, rec.Snapshot, err)
	}
	return s, rec, nil
}

// recoverFile restores the snapshot from names, or the damaged store's
// latest there, in place of the damaged file at path, which it locks, reads
// what it can of and moves aside.
func recoverFile(path, from string, cfg config) (Recovery, error) {
	var rec Recovery
	damaged, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return rec, err
	}
	defer damaged.Close() // and unlocked
	if err := lockDamaged(damaged, path, cfg, &rec); err != nil {
		return rec, err
	}
	if rec.Snapshot, err = choose(from, &rec); err != nil {
		return rec, err
	}
	f, err := os.Open(rec.Snapshot)
	if err != nil {
		return rec, err
	}
	tmp, restored, err := build(path, f, cfg)
	f.Close()
	if err != nil {
		return rec, fmt.Errorf("%s did not restore, the damaged file is left where it is: %w", rec.Snapshot, err)
	}
	defer os.Remove(tmp)
	aside, err := moveAside(path)
	if err != nil {
		return rec, err
	}
	if err := install(tmp, path); err != nil {
		if berr := moveBack(aside, path); berr != nil {
			return rec, fmt.Errorf("%w; the damaged file stays at %s: %w", err, aside, berr)
		}
		return rec, fmt.Errorf("%w; the damaged file is back where it was", err)
	}
	rec.Recovered, rec.DamagedFile, rec.Restored = true, aside, restored
	return rec, nil
}

// choose returns the snapshot file to restore: from if it is a file,
// else the latest of rec.Identity in the directory from.
func choose(from string, rec *Recovery) (string, error) {
	st, err := os.Stat(from)
	switch {
	case err != nil:
		return "", fmt.Errorf("no snapshot to recover from, the damaged file is left where it is: %w", err)
	case st.Mode().IsRegular():
		return from, nil
	case rec.Identity == "":
		return "", fmt.Errorf("the damaged file's identity cannot be read, so no snapshot in %s is known to be its own; name the snapshot file to restore: %w", from, snapshot.ErrIdentity)
	}
	ceiling := int64(math.MaxInt64)
	if rec.LastRevisionKnown {
		ceiling = rec.LastRevision
	}
	found, err := snapshot.LatestAtMost(from, rec.Identity, ceiling)
	rec.Skipped, rec.Foreign, rec.Above = found.Skipped, found.Foreign, found.Above
	if errors.Is(err, snapshot.ErrIdentity) {
		return "", fmt.Errorf("no snapshot of the damaged store to recover from, the damaged file is left where it is (a snapshot of another store is restored only when its file is named): %w", err)
	}
	if err != nil {
		return "", fmt.Errorf("no snapshot to recover from, the damaged file is left where it is: %w", err)
	}
	return found.Path, nil
}

// lockDamaged locks the damaged file f, opened at path, checks that it is
// still the file at path, and reads what it can of its revision and
// identity into rec.
func lockDamaged(f *os.File, path string, cfg config, rec *Recovery) error {
	if err := lockFile(f, cfg.lockTimeout); errors.Is(err, errLockTimeout) {
		return fmt.Errorf("%w: %s still held after %v", ErrLocked, path, cfg.lockTimeout)
	} else if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if now, err := os.Lstat(path); err != nil || !os.SameFile(st, now) {
		return fmt.Errorf("%s was replaced while it was being recovered", path)
	}
	rec.LastRevision, rec.LastRevisionKnown = lastRevision(f, st.Size())
	rec.Identity = lastIdentity(f, st.Size())
	return nil
}

// moveAside renames the damaged file at path aside, and returns its new
// name.
func moveAside(path string) (string, error) {
	aside := path + ".damaged-" + time.Now().UTC().Format("20060102T150405.000000000Z")
	if _, err := os.Lstat(aside); !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("cannot move the damaged file aside: %s exists", aside)
	}
	// install syncs the directory, once the restored file is in place.
	if err := os.Rename(path, aside); err != nil {
		return "", err
	}
	return aside, nil
}

// moveBack puts the damaged file back at path, unless something else is
// there by now.
func moveBack(aside, path string) error {
	if err := os.Link(aside, path); err != nil {
		return err
	}
	return errors.Join(os.Remove(aside), atomicfile.SyncDir(filepath.Dir(path)))
}
