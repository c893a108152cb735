// Package atomicfile writes files whole or not at all: the content goes to
// a temporary file in the file's directory, which is synced, given its
// mode, renamed to the file's name, and the directory synced. At every
// moment, whatever crash happens (the process killed, the machine losing
// power), the file is either as it was or holds all of the new content,
// never part of it.
//
// A crash before the rename leaves the temporary file behind, hidden:
// .NAME.DIGITS.tmp for the file NAME (IsTemp recognises one). Errors are
// the operating system's, naming the file they concern, for the caller to
// wrap.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// WriteFile writes data to the file path, creating it with mode perm or
// replacing it, whole or not at all (see the package doc). perm is set as
// it is, without the umask. Once it returns nil, path holds data, durably.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Commit()
}

// File is a file being written that becomes path only once Commit returns:
// until then its content is in a temporary file beside path (TempName),
// created with mode 0600, which never counts as path. Use it from one
// goroutine.
type File struct {
	f    *os.File
	path string
	perm fs.FileMode
	done bool // committed or closed
}

// Create starts writing path, which must name a file (not end in a
// separator), to be given mode perm (permission bits only) at Commit.
func Create(path string, perm fs.FileMode) (*File, error) {
	dir, name := filepath.Split(path)
	if name == "" || perm&^fs.ModePerm != 0 {
		return nil, &fs.PathError{Op: "create", Path: path, Err: fs.ErrInvalid}
	}
	f, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return nil, err
	}
	return &File{f: f, path: path, perm: perm}, nil
}

// TempName returns the temporary file's path, for a program that writes
// the file itself (pg_dump -f): Commit syncs and renames whatever it holds.
func (f *File) TempName() string { return f.f.Name() }

// Write writes to the temporary file; after Commit or Close it returns
// fs.ErrClosed.
func (f *File) Write(p []byte) (int, error) {
	if f.done {
		return 0, fs.ErrClosed
	}
	return f.f.Write(p)
}

// Commit makes the content written path's: it syncs the temporary file,
// gives it its mode, closes it, renames it to path and syncs the directory
// (SyncDir). Once it returns nil, path holds the whole content, durably.
// If it fails, path is as it was (or, if only the directory's sync failed,
// an error saying so, holds the whole content, not yet durably) and the
// temporary file is removed. Commit after Commit or Close returns
// fs.ErrClosed.
func (f *File) Commit() error {
	if f.done {
		return fs.ErrClosed
	}
	f.done = true
	tmp := f.f.Name()
	err := errors.Join(f.f.Sync(), f.f.Chmod(f.perm))
	err = errors.Join(err, f.f.Close())
	if err == nil {
		err = os.Rename(tmp, f.path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := SyncDir(filepath.Dir(f.path)); err != nil {
		return fmt.Errorf("sync the directory: %w", err)
	}
	return nil
}

// Close abandons a File not committed: the temporary file is closed and
// removed, and path stays as it was. After Commit it does nothing and
// returns nil, so it can be deferred.
func (f *File) Close() error {
	if f.done {
		return nil
	}
	f.done = true
	return errors.Join(f.f.Close(), os.Remove(f.f.Name()))
}

// SyncDir syncs the directory dir, so that a rename, link or removal in it
// is on disk. A directory the system cannot sync (os.ErrInvalid) is not an
// error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, os.ErrInvalid) {
		err = nil
	}
	return errors.Join(err, d.Close())
}

// IsTemp reports whether the directory entry entry is a temporary file of
// Create for the file name: .NAME.DIGITS.tmp (os.CreateTemp's random part
// is digits), so that the temporary file of another name (NAME.b) is not.
func IsTemp(entry, name string) bool {
	rest, ok := strings.CutPrefix(entry, "."+name+".")
	if !ok {
		return false
	}
	digits, ok := strings.CutSuffix(rest, ".tmp")
	return ok && digits != "" && strings.Trim(digits, "0123456789") == ""
}
