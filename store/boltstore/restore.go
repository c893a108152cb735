package boltstore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/converge-go/converge/internal/atomicfile"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/snapshot"
	bolt "go.etcd.io/bbolt"
)

// Restore makes a new store file at path from the snapshot r holds
// (store/snapshot), by the rule of the store package's doc (# Snapshots
// and restores):
//
//   - the file has an identity of its own, never the snapshot's, so a
//     controller that remembers the old store's knows this is another;
//   - its revision is the snapshot's plus a bump (WithRevisionBump,
//     DefaultRevisionBump by default), and every revision up to it is
//     compacted: a Watch after any earlier revision (one a client saw of
//     the old store) fails with store.ErrCompacted, and the client
//     re-lists, and the next write takes the revision after it;
//   - its objects are the snapshot's keys and value bytes (to be read
//     with the codec they were saved with), each with that one revision as
//     Revision and CreateRevision.
//
// The file is made whole under a temporary name in path's directory, in one
// transaction committed only once the whole snapshot has been read and has
// checked, synced, and linked to path only then: a damaged snapshot
// (snapshot.ErrDamaged, snapshot.ErrFormat) or any other error leaves no
// file at path. So does a snapshot holding what the store could not serve
// (snapshot.ErrUnservable and store.ErrInvalid): a value the check of
// WithValueCheck refuses (the error names its key), or a revision whose
// bump would pass snapshot.MaxRevision (the error names it), which would
// leave the restored store no room to write in. Restore refuses a path
// where a file exists, with an error matching fs.ErrExist and
// store.ErrExists, and options out of range with store.ErrInvalid; options
// other than WithRevisionBump, WithValueCheck and WithLockTimeout are
// checked and otherwise unused. It costs one read of the snapshot and one
// write of the new file.
func Restore(path string, r io.Reader, opts ...Option) (snapshot.Restored, error) {
	cfg, err := parseOptions(opts)
	if err != nil {
		return snapshot.Restored{}, err
	}
	if err := restorable(path, r); err != nil {
		return snapshot.Restored{}, err
	}
	tmp, restored, err := build(path, r, cfg)
	if err != nil {
		return snapshot.Restored{}, err
	}
	defer os.Remove(tmp)
	if err := install(tmp, path); err != nil {
		return snapshot.Restored{}, err
	}
	return restored, nil
}

// restorable refuses an empty path, a nil reader and a path that exists.
func restorable(path string, r io.Reader) error {
	switch {
	case path == "":
		return fmt.Errorf("%w: empty path", store.ErrInvalid)
	case r == nil:
		return fmt.Errorf("%w: nil snapshot reader", store.ErrInvalid)
	}
	if _, err := os.Lstat(path); err == nil {
		return existsError(path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("boltstore: restore %s: %w", path, err)
	}
	return nil
}

func existsError(path string) error {
	return fmt.Errorf("boltstore: restore into %s: the %w (a restore makes a new file): %w", path, fs.ErrExist, store.ErrExists)
}

// build writes the store restored from the snapshot in r into a new file
// beside path, and returns its name, for install.
func build(path string, r io.Reader, cfg config) (string, snapshot.Restored, error) {
	rd, err := snapshot.NewReader(r, cfg.valueCheck)
	if err != nil {
		return "", snapshot.Restored{}, fmt.Errorf("boltstore: restore %s: %w", path, err)
	}
	snap := rd.Info()
	if snap.Revision > snapshot.MaxRevision-cfg.bump {
		return "", snapshot.Restored{}, fmt.Errorf("boltstore: restore %s: %w: %w: the snapshot's revision %d plus the bump %d passes snapshot.MaxRevision %d, leaving the store no room to write in",
			path, snapshot.ErrUnservable, store.ErrInvalid, snap.Revision, cfg.bump, int64(snapshot.MaxRevision))
	}
	rev := snap.Revision + cfg.bump
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".restore-*")
	if err != nil {
		return "", snapshot.Restored{}, fmt.Errorf("boltstore: restore %s: %w", path, err)
	}
	name := tmp.Name()
	var identity string
	err = tmp.Close()
	if err == nil {
		identity, err = fill(name, rd, rev, cfg)
	}
	if err != nil {
		os.Remove(name)
		return "", snapshot.Restored{}, fmt.Errorf("boltstore: restore %s: %w", path, err)
	}
	return name, snapshot.Restored{Snapshot: rd.Info(), Identity: identity, Revision: rev}, nil
}

// fill makes the bbolt file name a store at revision rev, compacted up to
// it, holding the objects rd reads, in one transaction that commits only if
// rd reads to its end; it returns the store's identity.
func fill(name string, rd *snapshot.Reader, rev int64, cfg config) (string, error) {
	db, err := bolt.Open(name, 0o600, &bolt.Options{Timeout: cfg.lockTimeout})
	if err != nil {
		return "", err
	}
	var identity string
	err = db.Update(func(tx *bolt.Tx) error {
		if err := initialise(tx); err != nil {
			return err
		}
		b, err := openBuckets(tx)
		if err != nil {
			return err
		}
		var n int64
		for {
			obj, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if err := b.objects.Put([]byte(obj.Key), encodeObject(obj.Key, rev, rev, obj.Value)); err != nil {
				return err
			}
			n++
		}
		if identity, err = readIdentity(b.meta); err != nil {
			return err
		}
		return errors.Join(
			putCounter(b.meta, revisionKey, rev),
			putCounter(b.meta, compactedKey, rev),
			putCounter(b.meta, objectsKey, n),
		)
	})
	return identity, errors.Join(err, db.Close())
}

// install links the complete file tmp to path, which must not exist, and
// syncs the directory.
func install(tmp, path string) error {
	if err := os.Link(tmp, path); errors.Is(err, fs.ErrExist) {
		return existsError(path)
	} else if err != nil {
		return fmt.Errorf("boltstore: restore %s: %w", path, err)
	}
	if err := atomicfile.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("boltstore: restore %s: sync the directory: %w", path, err)
	}
	return nil
}
