package snapshot

import (
	"context"
	"fmt"

	"github.com/converge-go/converge/internal/atomicfile"
	"github.com/converge-go/converge/store"
)

// Ext is the file name extension of snapshot files: Latest and Retain
// consider the files of a directory that have it, and no others.
const Ext = ".snap"

// tempPrefix starts the name of a snapshot file being written (the
// temporary files of internal/atomicfile are hidden): with it, and without
// Ext at its end, Latest never takes one for a snapshot.
const tempPrefix = "."

// WriteFile saves a snapshot of src (Save) to the file at path, whole or
// not at all: it writes a temporary file in the same directory (mode
// 0600), syncs it, renames it to path (replacing a file there) and syncs
// the directory. A crash or an error at any point leaves path as it was,
// and an error removes the temporary file; a crash can leave one, named
// "." + the file's name + "." + random digits + ".tmp", which Latest
// ignores. It returns the snapshot's Info once the file and its name are
// on disk.
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
	tmp, err := atomicfile.Create(path, 0o600)
	if err != nil {
		return Info{}, fmt.Errorf("snapshot: %w", err)
	}
	defer tmp.Close()
	info, err := Save(ctx, tmp, captured(c))
	if err == nil {
		err = tmp.Commit()
	}
	if err != nil {
		return Info{}, fmt.Errorf("snapshot: write %s: %w", path, err)
	}
	return info, nil
}

// captured is a Source that has already been listed: WriteFile lists the
// store before it creates a file, so that a store it cannot reach leaves
// no temporary file behind.
type captured capture

func (c captured) capture(context.Context) (capture, error) { return capture(c), nil }

func (c captured) revision(context.Context) (int64, string, error) { return c.rev, c.identity, nil }
