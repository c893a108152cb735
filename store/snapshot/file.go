package snapshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/converge-go/converge/store"
)

// Ext is the file name extension of snapshot files: Latest and Retain
// consider the files of a directory that have it, and no others.
const Ext = ".snap"

// tempPrefix starts the name of a snapshot file being written: hidden, and
// without Ext at its end, so that Latest never takes one for a snapshot.
const tempPrefix = "."

// WriteFile saves a snapshot of src (Save) to the file at path, whole or
// not at all: it writes a temporary file in the same directory (mode
// 0600), syncs it, renames it to path (replacing a file there) and syncs
// the directory. A crash or an error at any point leaves path as it was,
// and an error removes the temporary file; a crash can leave one, named
// "." + the file's name + ".tmp-" + random digits, which Latest ignores.
// It returns the snapshot's Info once the file and its name are on disk.
func WriteFile(ctx context.Context, path string, src Source) (Info, error) {
	if path == "" {
		return Info{}, fmt.Errorf("snapshot: %w: empty path", store.ErrInvalid)
	}
	if src == nil {
		return Info{}, fmt.Errorf("snapshot: %w: nil source", store.ErrInvalid)
	}
	c, err := src.capture(ctx)
	if err != nil {
		return Info{}, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), tempPrefix+filepath.Base(path)+".tmp-*")
	if err != nil {
		return Info{}, fmt.Errorf("snapshot: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	info, err := Save(ctx, tmp, captured(c))
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = tmp.Close()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return Info{}, fmt.Errorf("snapshot: write %s: %w", path, err)
	}
	committed = true
	if err := syncDir(filepath.Dir(path)); err != nil {
		return Info{}, fmt.Errorf("snapshot: write %s: sync the directory: %w", path, err)
	}
	return info, nil
}

// captured is a Source that has already been listed: WriteFile lists the
// store before it creates a file, so that a store it cannot reach leaves
// no temporary file behind.
type captured capture

func (c captured) capture(context.Context) (capture, error) { return capture(c), nil }

func (c captured) revision(context.Context) (int64, string, error) { return c.rev, c.identity, nil }

// syncDir syncs the directory dir, so that a rename in it is on disk.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, os.ErrInvalid) {
		err = nil // a file system that cannot sync a directory
	}
	return errors.Join(err, d.Close())
}
