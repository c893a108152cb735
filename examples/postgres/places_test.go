package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnOperatorDirectoryAnotherUserMayChangeIsRefused: postgres operator
// refuses (exit 1) a -dir of mode 0777, or (as root) of another user,
// before anything else, naming -dir, what is wrong, the fix and
// -insecure-permissions; with -insecure-permissions it goes on, with a
// warning (here to fail on PostgreSQL's programs, which are not found).
func TestAnOperatorDirectoryAnotherUserMayChangeIsRefused(t *testing.T) {
	t.Setenv("CONVERGE_PG_BIN", "")
	shared := t.TempDir()
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{"of mode 0777": shared}
	if os.Getuid() == 0 {
		theirs := t.TempDir()
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		dirs["of another user"] = theirs
	}
	for name, dir := range dirs {
		args := []string{"-store-server", "http://127.0.0.1:1/store", "-pg", "host=/nonexistent", "-pg-bin", t.TempDir(), "-dir", dir}
		var stderr bytes.Buffer
		code := runOperatorCommand(args, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), "-dir "+dir) || !strings.Contains(stderr.String(), "-insecure-permissions") {
			t.Errorf("%s: exit %d; want 1 naming -dir %s and -insecure-permissions:\n%s", name, code, dir, stderr.String())
		}
		stderr.Reset()
		code = runOperatorCommand(append(args, "-insecure-permissions"), &stderr)
		if code != 1 || strings.Contains(stderr.String(), "operator: -dir") || !strings.Contains(stderr.String(), "level=WARN") {
			t.Errorf("%s: with -insecure-permissions: exit %d; want a warning, then PostgreSQL not found:\n%s", name, code, stderr.String())
		}
	}
}

// TestAnotherUsersSecretFileIsRefused: a secret file of mode 0600 that
// belongs to another user is refused, as token files are (as root only).
func TestAnotherUsersSecretFileIsRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("skipped: making a file of another user needs root")
	}
	path := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(path, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := readSecretFile(path); !errors.Is(err, errSecretFile) || !strings.Contains(err.Error(), "belongs to user 65534") {
		t.Errorf("another user's secret file: %v; want errSecretFile saying whose it is", err)
	}
}
