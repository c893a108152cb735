//go:build unix

package privatefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// nobody is the user the tests give a place to, to make it another user's
// (as root only).
const nobody = 65534

// TestEveryModeAndOwnerIsJudgedByTheRuleOfItsKind: for every permission
// mode, and for the process's user and another (as root), a secret file, a
// trusted file and a trusted directory are accepted exactly when the rule
// of the package doc says (written here from the doc, not from the code),
// and a refusal matches ErrUnsafe, names the path, and says how to fix it.
func TestEveryModeAndOwnerIsJudgedByTheRuleOfItsKind(t *testing.T) {
	owners := []int{os.Getuid()}
	if os.Getuid() == 0 {
		owners = append(owners, nobody)
	}
	dir := t.TempDir()
	file, sub := filepath.Join(dir, "file"), filepath.Join(dir, "dir")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	kinds := []struct {
		name, path string
		check      func(string) error
		ok         func(perm os.FileMode, uid int) bool
	}{
		{"a secret", file, Secret, func(perm os.FileMode, uid int) bool {
			return perm&0o077 == 0 && uid == os.Getuid()
		}},
		{"a trusted file", file, Trusted, trustedRule},
		{"a trusted directory", sub, Trusted, trustedRule},
		{"a state directory", sub, Dir, trustedRule},
	}
	for _, k := range kinds {
		for _, uid := range owners {
			if err := os.Chown(k.path, uid, uid); err != nil {
				t.Fatal(err)
			}
			for perm := os.FileMode(0); perm <= 0o777; perm++ {
				if err := os.Chmod(k.path, perm); err != nil {
					t.Fatal(err)
				}
				err := k.check(k.path)
				if want := k.ok(perm, uid); want != (err == nil) {
					t.Fatalf("%s of mode %04o of user %d: %v; want accepted %v", k.name, perm, uid, err, want)
				}
				if err != nil && (!errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), k.path) ||
					!strings.Contains(err.Error(), "chmod") && !strings.Contains(err.Error(), "chown")) {
					t.Fatalf("%s of mode %04o of user %d: %q; want ErrUnsafe naming the path and the fix", k.name, perm, uid, err)
				}
			}
		}
	}
}

// trustedRule: group and others may not write; the owner is the
// process's user or root.
func trustedRule(perm os.FileMode, uid int) bool {
	return perm&0o022 == 0 && (uid == os.Getuid() || uid == 0)
}

// TestADirectoryMadeIsMadeWithMode0700: Dir makes a missing directory and
// its parents readable, writable and searchable by its user alone.
func TestADirectoryMadeIsMadeWithMode0700(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b")
	if err := Dir(path); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, filepath.Dir(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, want a directory of mode 0700", p, fi.Mode())
		}
	}
}

// TestAnotherUsersDirectoryIsRefusedEvenToRoot: a directory of mode 0700
// that belongs to another user than root and the process's is refused,
// whoever the process runs as, and the error says whose it is.
func TestAnotherUsersDirectoryIsRefusedEvenToRoot(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("skipped: making a directory of another user needs root")
	}
	path := filepath.Join(t.TempDir(), "theirs")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	err := Dir(path)
	if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "belongs to user 65534") || !strings.Contains(err.Error(), "chown 0 "+path) {
		t.Fatalf("another user's directory: %v; want ErrUnsafe saying whose it is and the chown", err)
	}
}

// TestWhatIsNeitherAFileNorADirectoryIsRefused: a FIFO is neither a
// secret nor a trusted place; a missing path is the error of os.Stat.
func TestWhatIsNeitherAFileNorADirectoryIsRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, check := range map[string]func(string) error{"Secret": Secret, "Trusted": Trusted} {
		if err := check(fifo); !errors.Is(err, ErrUnsafe) {
			t.Errorf("%s of a FIFO: %v; want ErrUnsafe", name, err)
		}
		if err := check(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s of a missing path: %v; want ErrNotExist", name, err)
		}
	}
}
