package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/converge-go/converge/internal/testcerts"
	"github.com/converge-go/converge/store/snapshot/snapshottest"
)

// nobody is the user a test gives a place to, to make it another user's
// (as root only).
const nobody = 65534

// unsafePlace is a place given to a flag that the server must refuse, and
// what its refusal must say.
type unsafePlace struct {
	args []string // the flags naming the place
	says []string // what the error says: the flag, the path, the fix
}

// unsafePlaces returns one unsafe place of each kind, made in t's
// temporary directories: -dir, -snapshot-dir and -log-dir of mode 0777 or of
// another user, -recover-from a directory or a file others may write,
// -restore-from another user's file, -tls-key of mode 0644, and -kinds,
// -client-ca and -tls-cert that others may write (-kinds also another
// user's).
func unsafePlaces(t *testing.T) map[string]unsafePlace {
	t.Helper()
	chmod := func(path string, mode os.FileMode) string {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	snap := func(mode os.FileMode) string {
		path := filepath.Join(t.TempDir(), "s.snap")
		snapshottest.WriteFile(t, path, snapshottest.Header{Identity: "bolt:A", Revision: 1}, snapshottest.Object("app/a", `{"spec":{}}`, 1))
		return chmod(path, mode)
	}
	certs, err := testcerts.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	kinds := func(mode os.FileMode) string {
		path := filepath.Join(t.TempDir(), "kinds.json")
		if err := os.WriteFile(path, []byte(dbRules), 0o600); err != nil {
			t.Fatal(err)
		}
		return chmod(path, mode)
	}
	shared, sharedSnaps, sharedLog := chmod(t.TempDir(), 0o777), chmod(t.TempDir(), 0o777), chmod(t.TempDir(), 0o777)
	places := map[string]unsafePlace{
		"-dir of mode 0777":                      {[]string{"-dir", shared}, []string{"-dir", shared, "0777", "chmod 700 " + shared}},
		"-snapshot-dir of mode 0777":             {[]string{"-snapshot-dir", sharedSnaps}, []string{"-snapshot-dir", sharedSnaps, "chmod 700"}},
		"-log-dir of mode 0777":                  {[]string{"-log-dir", sharedLog}, []string{"-log-dir", sharedLog, "chmod 700"}},
		"-recover-from a directory of mode 0770": {[]string{"-recover-from", chmod(t.TempDir(), 0o770)}, []string{"-recover-from", "0770", "chmod 700"}},
		"-recover-from a file of mode 0666":      {[]string{"-recover-from", snap(0o666)}, []string{"-recover-from", "0666", "chmod 644"}},
		"-restore-from a file of mode 0646":      {[]string{"-restore-from", snap(0o646)}, []string{"-restore-from", "0646", "chmod 644"}},
		"-tls-key of mode 0644": {[]string{"-tls-cert", certs.ServerCert, "-tls-key", chmod(certs.ServerKey, 0o644)},
			[]string{"-tls-key", certs.ServerKey, "0644", "chmod 600"}},
		"-kinds of mode 0666": {[]string{"-kinds", kinds(0o666)}, []string{"-kinds", "kinds.json", "0666", "chmod 644"}},
	}
	// The client CAs and the certificate, each with the other files of
	// TLS safe, from a second set.
	tlsCerts, err := testcerts.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	places["-client-ca of mode 0646"] = unsafePlace{[]string{"-tls-cert", tlsCerts.ServerCert, "-tls-key", tlsCerts.ServerKey, "-client-ca", chmod(tlsCerts.CA, 0o646)},
		[]string{"-client-ca", tlsCerts.CA, "0646", "chmod 644"}}
	certs2, err := testcerts.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	places["-tls-cert of mode 0666"] = unsafePlace{[]string{"-tls-cert", chmod(certs2.ServerCert, 0o666), "-tls-key", certs2.ServerKey},
		[]string{"-tls-cert", certs2.ServerCert, "0666", "chmod 644"}}
	if os.Getuid() != 0 {
		return places
	}
	theirs := func(path string) string {
		if err := os.Chown(path, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		return path
	}
	theirDir, theirSnaps, theirSnap := theirs(t.TempDir()), theirs(t.TempDir()), theirs(snap(0o600))
	places["-dir of another user"] = unsafePlace{[]string{"-dir", theirDir}, []string{"-dir", theirDir, "belongs to user 65534", "chown 0 " + theirDir}}
	places["-snapshot-dir of another user"] = unsafePlace{[]string{"-snapshot-dir", theirSnaps}, []string{"-snapshot-dir", "belongs to user 65534"}}
	places["-restore-from another user's file"] = unsafePlace{[]string{"-restore-from", theirSnap}, []string{"-restore-from", "belongs to user 65534"}}
	places["-kinds another user's file"] = unsafePlace{[]string{"-kinds", theirs(kinds(0o644))}, []string{"-kinds", "belongs to user 65534"}}
	return places
}

// TestAnUnsafePlaceIsRefusedSayingWhyAndHowToFixIt: a state directory, a
// snapshot directory, a file or directory to recover or restore from that
// another user may change, and a TLS key others may read, are refused
// (exit 1, nothing served, no store file made), with an error naming the
// flag, the path, the mode or owner, the fix and -insecure-permissions.
// As root, a place of another user is refused too.
func TestAnUnsafePlaceIsRefusedSayingWhyAndHowToFixIt(t *testing.T) {
	for name, p := range unsafePlaces(t) {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			s := launch(t, dir, p.args...)
			code := s.refused(t)
			msg := s.stderr.String()
			if code != exitError {
				t.Errorf("exit %d, want %d:\n%s", code, exitError, msg)
			}
			for _, want := range append(p.says, "-insecure-permissions") {
				if !strings.Contains(msg, want) {
					t.Errorf("the error does not say %q:\n%s", want, msg)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, StoreFile)); !os.IsNotExist(err) {
				t.Errorf("a store file was made (%v)", err)
			}
		})
	}
}

// TestInsecurePermissionsAcceptsAnUnsafePlaceWithAWarning: the same places
// are used with -insecure-permissions, and a warning names each.
func TestInsecurePermissionsAcceptsAnUnsafePlaceWithAWarning(t *testing.T) {
	for name, p := range unsafePlaces(t) {
		if p.args[0] == "-recover-from" || p.args[0] == "-restore-from" {
			continue // restores are tested by their own tests; one suffices here
		}
		s := start(t, filepath.Join(t.TempDir(), "store"), append(p.args, "-insecure-permissions")...)
		if !strings.Contains(s.stderr.String(), "unsafe place") {
			t.Errorf("%s: no warning:\n%s", name, s.stderr)
		}
		if code := s.stop(t); code != exitOK {
			t.Errorf("%s: exit %d after SIGTERM", name, code)
		}
	}
}

// TestTheDirectoriesTheServerMakesAreItsUsersAlone: a -dir and a
// -snapshot-dir and a -log-dir that do not exist are made with mode 0700.
func TestTheDirectoriesTheServerMakesAreItsUsersAlone(t *testing.T) {
	dir, snaps := filepath.Join(t.TempDir(), "a", "store"), filepath.Join(t.TempDir(), "b", "snaps")
	logDir := filepath.Join(t.TempDir(), "c", "log")
	s := start(t, dir, "-snapshot-dir", snaps, "-log-dir", logDir)
	s.stop(t)
	for _, p := range []string{dir, filepath.Dir(dir), snaps, filepath.Dir(snaps), logDir, filepath.Dir(logDir)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %04o, want 0700", p, fi.Mode().Perm())
		}
	}
}
