package boltstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/converge-go/converge/internal/atomicfile"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

var errLockTimeout = errors.New("boltstore: lock wait timed out")

// openDB opens the bbolt file at path for the Store: it creates a missing
// file whole (see createWith), locks the file, verifies its structure
// (verifyFile) and only then lets bbolt map it. An existing file is never
// written before it has been verified, so a damaged file is refused as it
// is: never reset, never partly rewritten.
func openDB(path string, cfg config) (*bolt.DB, error) { return openWith(path, cfg, initialise) }

// openWith is openDB with init making a missing file's first transaction
// (its buckets): a checkpoint's file is opened the same way.
func openWith(path string, cfg config, init func(*bolt.Tx) error) (*bolt.DB, error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		if err := createWith(path, cfg, init); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	db, err := openLocked(f, cfg)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return db, nil
}

// openLocked locks f, verifies it and opens it with bbolt, which takes over
// f (and closes it with the DB).
func openLocked(f *os.File, cfg config) (*bolt.DB, error) {
	path := f.Name()
	if err := lockFile(f, cfg.lockTimeout); errors.Is(err, errLockTimeout) {
		return nil, fmt.Errorf("%w: %s still held after %v", ErrLocked, path, cfg.lockTimeout)
	} else if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrCorrupt, path)
	}
	if err := verifyFile(f, info.Size()); err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	var db *bolt.DB
	opts := &bolt.Options{
		Timeout:  cfg.lockTimeout,
		OpenFile: func(string, int, fs.FileMode) (*os.File, error) { return f, nil },
	}
	err = guarded(func() (err error) {
		db, err = bolt.Open(path, 0o600, opts)
		return err
	})
	if err != nil {
		if db != nil {
			_ = db.Close()
		}
		return nil, openError(path, cfg, err)
	}
	return db, nil
}

// createWith creates a new file at path, with init making its first
// transaction (the store's buckets, or a checkpoint's). bbolt creates a
// file empty and then writes its first pages, and the store then adds its
// buckets; a crash in between would leave an empty file or one without
// buckets, which Open refuses as damaged. So the file is made complete
// under a temporary name in the same directory, synced, and then linked to
// path, which fails, harmlessly, if another Open created path meanwhile.
func createWith(path string, cfg config, init func(*bolt.Tx) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".new-*")
	if err != nil {
		return fmt.Errorf("boltstore: create %s: %w", path, err)
	}
	name := tmp.Name()
	defer os.Remove(name)
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("boltstore: create %s: %w", path, err)
	}
	db, err := bolt.Open(name, 0o600, &bolt.Options{Timeout: cfg.lockTimeout})
	if err != nil {
		return fmt.Errorf("boltstore: create %s: %w", path, err)
	}
	if err := errors.Join(db.Update(init), db.Close()); err != nil {
		return fmt.Errorf("boltstore: create %s: %w", path, err)
	}
	if err := os.Link(name, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("boltstore: create %s: %w", path, err)
	}
	_ = atomicfile.SyncDir(filepath.Dir(path))
	return nil
}

// openError maps bbolt's errors from Open to the package's.
func openError(path string, cfg config, err error) error {
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("%w: %s still held after %v", ErrLocked, path, cfg.lockTimeout)
	case errors.Is(err, ErrCorrupt):
		return fmt.Errorf("boltstore: open %s: %w", path, err)
	case errors.As(err, new(*fs.PathError)), errors.As(err, new(*os.SyscallError)):
		// The file system refused: permissions, space, and the like.
		return fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	// Any other failure is about what the file holds.
	return fmt.Errorf("%w: %s: %w", ErrCorrupt, path, err)
}
