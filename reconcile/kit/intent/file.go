package intent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/converge-go/converge/internal/atomicfile"
)

// WriteFile writes data to the file path, creating it with mode perm or
// replacing it, so that at every moment, whatever crash happens (the
// process killed, the machine losing power), path is either as it was or
// holds all of data, never part of it: data goes to a temporary file in
// path's directory, which is synced, then renamed to path, and the
// directory synced. An attempt's result file written so is never read
// half-written. perm is set as it is (no umask). See File for content
// written as it comes.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	if err := checkFile("WriteFile", path, perm); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, data, perm); err != nil {
		return fmt.Errorf("intent: write %s: %w", path, err)
	}
	return nil
}

// File is a file being written that becomes path only once Commit
// returns: until then its content is in a temporary file beside path
// (TempName), which never counts as path — a dump being written is never
// mistaken for a complete one. Use it from one goroutine.
type File struct {
	f    *atomicfile.File
	path string
}

// CreateFile starts writing path: a temporary file in path's directory,
// named .NAME.RANDOM.tmp after path's NAME, created with mode 0600. A crash
// before Commit leaves that file behind (RemoveLeftovers removes such
// files) and path as it was.
func CreateFile(path string, perm fs.FileMode) (*File, error) {
	if err := checkFile("CreateFile", path, perm); err != nil {
		return nil, err
	}
	f, err := atomicfile.Create(path, perm)
	if err != nil {
		return nil, fmt.Errorf("intent: create %s: %w", path, err)
	}
	return &File{f: f, path: path}, nil
}

// checkFile refuses a path that names no file, or perm beyond the
// permission bits, with an error matching ErrInvalid.
func checkFile(op, path string, perm fs.FileMode) error {
	if path == "" || perm&^fs.ModePerm != 0 {
		return fmt.Errorf("%w: %s(%q, %v): want a path and permission bits", ErrInvalid, op, path, perm)
	}
	if _, name := filepath.Split(path); name == "" {
		return fmt.Errorf("%w: %s(%q): a directory", ErrInvalid, op, path)
	}
	return nil
}

// TempName returns the temporary file's path, for a program that writes
// the file itself (pg_dump -f): Commit syncs and renames whatever it holds.
func (f *File) TempName() string { return f.f.TempName() }

// Write writes to the temporary file.
func (f *File) Write(p []byte) (int, error) {
	n, err := f.f.Write(p)
	if errors.Is(err, fs.ErrClosed) {
		return n, fmt.Errorf("intent: write %s: %w", f.path, err)
	}
	return n, err
}

// Commit makes the content written path's: it syncs the temporary file,
// gives it its mode, closes it, renames it to path and syncs the
// directory. Once it returns nil, path holds the whole content, durably.
// If it fails, path is as it was (or, if only the directory's sync failed,
// holds the whole content, not yet durably) and the temporary file is
// removed. Commit after Commit or Close returns an error.
func (f *File) Commit() error {
	if err := f.f.Commit(); err != nil {
		return fmt.Errorf("intent: commit %s: %w", f.path, err)
	}
	return nil
}

// Close abandons a File not committed: the temporary file is closed and
// removed, and path stays as it was. After Commit it does nothing and
// returns nil, so it can be deferred.
func (f *File) Close() error { return f.f.Close() }

// RemoveLeftovers removes the temporary files that writes of path
// interrupted by a crash left in its directory. Call it when no write of
// path is in progress (at startup): it would remove that write's file.
func RemoveLeftovers(path string) error {
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("intent: remove the leftovers of %s: %w", path, err)
	}
	var errs []error
	for _, e := range entries {
		if atomicfile.IsTemp(e.Name(), name) && e.Type().IsRegular() {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
