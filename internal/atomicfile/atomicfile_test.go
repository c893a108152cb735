package atomicfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/converge-go/converge/internal/atomicfile"
)

// names lists dir's file names, sorted.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ns []string
	for _, e := range es {
		ns = append(ns, e.Name())
	}
	slices.Sort(ns)
	return ns
}

// TestWriteFileReplacesTheFileWholeWithItsModeAndNoTemporaryFile: the file
// is created with its mode exactly (no umask), replaced whole, and no
// temporary file stays beside it.
func TestWriteFileReplacesTheFileWholeWithItsModeAndNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := atomicfile.WriteFile(path, []byte("first"), 0o640); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v (%v), want 0640", fi.Mode().Perm(), err)
	}
	if err := atomicfile.WriteFile(path, []byte("second, longer"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "second, longer" {
		t.Fatalf("read %q, %v", b, err)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"f"}) {
		t.Fatalf("files %v, want only f", got)
	}
	for _, bad := range []struct {
		path string
		perm fs.FileMode
	}{{dir + "/", 0o600}, {filepath.Join(dir, "g"), fs.ModeDir | 0o700}} {
		if err := atomicfile.WriteFile(bad.path, nil, bad.perm); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("WriteFile(%q, %v): %v, want fs.ErrInvalid", bad.path, bad.perm, err)
		}
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "missing", "f"), nil, 0o600); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing directory: %v, want fs.ErrNotExist", err)
	}
}

// TestAFileIsItsPathOnlyFromCommitAndAnAbandonedOneLeavesNothing: until
// Commit the path keeps its content and the temporary file is one IsTemp
// recognises; Close without Commit leaves the path as it was and no
// temporary file; use after the end is fs.ErrClosed, Close after it nil.
func TestAFileIsItsPathOnlyFromCommitAndAnAbandonedOneLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "dump")
	if err := atomicfile.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := atomicfile.Create(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("new")); err != nil {
		t.Fatal(err)
	}
	if !atomicfile.IsTemp(filepath.Base(f.TempName()), "dump") || filepath.Dir(f.TempName()) != dir {
		t.Errorf("temporary file %s: not beside dump, or not recognised", f.TempName())
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("before Commit the path holds %q", b)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Fatalf("after Commit the path holds %q", b)
	}
	if _, err := f.Write(nil); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Write after Commit: %v", err)
	}
	if err := f.Commit(); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Commit after Commit: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("Close after Commit: %v", err)
	}

	f, err = atomicfile.Create(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("abandoned")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Fatalf("after an abandoned write the path holds %q", b)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"dump"}) {
		t.Fatalf("files %v, want only dump", got)
	}
}

// TestIsTempRecognisesOnlyTheNamesTemporaryFiles: .NAME.DIGITS.tmp only,
// not another name's temporary file nor names that merely look alike.
func TestIsTempRecognisesOnlyTheNamesTemporaryFiles(t *testing.T) {
	for entry, want := range map[string]bool{
		".a.123.tmp":      true,
		".a.b.123.tmp":    false, // a.b's
		".a.tmp":          false,
		".a.x1.tmp":       false,
		"a.123.tmp":       false,
		".a.123.tmp.keep": false,
		"a":               false,
	} {
		if got := atomicfile.IsTemp(entry, "a"); got != want {
			t.Errorf("IsTemp(%q, \"a\") = %v, want %v", entry, got, want)
		}
	}
}

// TestSyncDirSyncsADirectoryAndReportsAMissingOne: a directory syncs; a
// missing one is fs.ErrNotExist.
func TestSyncDirSyncsADirectoryAndReportsAMissingOne(t *testing.T) {
	dir := t.TempDir()
	if err := atomicfile.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.SyncDir(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing directory: %v", err)
	}
}
