package tokenfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestATokenIsCreatedOnceReadableByItsUserAloneAndReadBack: the generated
// token is 32 random bytes in hex, in a file of mode 0600, and reading it
// back (ReadOrCreate included) gives the same token.
func TestATokenIsCreatedOnceReadableByItsUserAloneAndReadBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	tok, err := ReadOrCreate(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) != 64 || strings.Trim(tok, "0123456789abcdef") != "" {
		t.Fatalf("token %d bytes, not 32 random bytes in hex", len(tok))
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %04o, want 0600", fi.Mode().Perm())
	}
	again, err := ReadOrCreate(path)
	if err != nil || again != tok {
		t.Fatalf("read back %v, %v: not the token made", again == tok, err)
	}
	if other, _ := Create(filepath.Join(t.TempDir(), "token")); other == tok {
		t.Fatal("two tokens alike")
	}
}

// TestUnsafeTokenFilesAreRefusedWithoutShowingTheirContent: a file others
// may read or change, a symbolic link, a FIFO, an empty file or one with
// more than a token is refused with ErrUnsafe, and no error shows what the
// file holds; a missing file is not an error.
func TestUnsafeTokenFilesAreRefusedWithoutShowingTheirContent(t *testing.T) {
	const secret = "s3cret-token-value"
	f := newFiles(t, secret)
	good := f.write("good", secret+"\n", 0o600)
	unsafe := f.unsafe(good)
	unsafe["empty"] = f.write("empty", "", 0o600)
	unsafe["two tokens"] = f.write("two", secret+" "+secret, 0o600)
	for name, path := range unsafe {
		_, ok, err := Read(path)
		if !errors.Is(err, ErrUnsafe) || ok {
			t.Errorf("%s: %v (ok %v), want ErrUnsafe", name, err, ok)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error shows the file's content: %v", name, err)
		}
	}
	if tok, ok, err := Read(good); err != nil || !ok || tok != secret {
		t.Errorf("a private token file: %v %v", ok, err)
	}
	if _, ok, err := Read(filepath.Join(f.dir, "missing")); ok || err != nil {
		t.Errorf("a missing file: ok %v, %v", ok, err)
	}
}

// TestAnotherUsersTokenFileIsRefused: a file of mode 0600 that belongs to
// another user is refused (it needs root to make one).
func TestAnotherUsersTokenFileIsRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("skipped: making a file of another user needs root")
	}
	path := filepath.Join(t.TempDir(), "theirs")
	if err := os.WriteFile(path, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Read(path); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("another user's file: %v, want ErrUnsafe", err)
	}
}

// TestASecretIsOneLineOfAnyTextInAFileThatMeetsTheTokenFilesRule:
// ReadSecret gives back a line with spaces and any UTF-8, trimmed; it
// refuses, with ErrUnsafe and without showing the content, every file
// Read refuses for its mode, kind or link, and an empty file, one of two
// lines or one too long; a missing file matches fs.ErrNotExist.
func TestASecretIsOneLineOfAnyTextInAFileThatMeetsTheTokenFilesRule(t *testing.T) {
	const secret = "pass wörd: s3cret"
	f := newFiles(t, secret)
	good := f.write("good", "  "+secret+"\n", 0o600)
	if got, err := ReadSecret(good); err != nil || got != secret {
		t.Errorf("a private secret file: %q, %v", got, err)
	}
	unsafe := f.unsafe(good)
	unsafe["empty"] = f.write("empty", " \n", 0o600)
	unsafe["too long"] = f.write("long", strings.Repeat(secret, maxBytes/len(secret)+1), 0o600)
	for name, path := range unsafe {
		_, err := ReadSecret(path)
		if !errors.Is(err, ErrUnsafe) {
			t.Errorf("%s: %v, want ErrUnsafe", name, err)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error shows the file's content: %v", name, err)
		}
	}
	if _, err := ReadSecret(filepath.Join(f.dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
}

// files makes the files of the refusal tests in a directory of their own.
type files struct {
	t      *testing.T
	dir    string
	secret string
}

func newFiles(t *testing.T, secret string) files {
	return files{t: t, dir: t.TempDir(), secret: secret}
}

// write makes the file name with content and mode (whatever the umask).
func (f files) write(name, content string, mode os.FileMode) string {
	p := filepath.Join(f.dir, name)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// unsafe returns, by what is wrong with them, the files every reader
// refuses for their mode, kind or link (a link to good), each holding the
// secret, and one of two lines.
func (f files) unsafe(good string) map[string]string {
	link := filepath.Join(f.dir, "link")
	if err := os.Symlink(good, link); err != nil {
		f.t.Fatal(err)
	}
	fifo := filepath.Join(f.dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		f.t.Fatal(err)
	}
	return map[string]string{
		"world-readable": f.write("readable", f.secret, 0o644),
		"group-writable": f.write("writable", f.secret, 0o620),
		"symbolic link":  link,
		"fifo":           fifo,
		"two lines":      f.write("lines", f.secret+"\n"+f.secret+"\n", 0o600),
	}
}
