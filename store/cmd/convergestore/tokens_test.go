package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
)

// raw is the value type of the tests that need no Go type.
type raw = json.RawMessage

func TestWithoutATokenTheServerGeneratesAPrivateOneThatClientsUseAndRestartsKeep(t *testing.T) {
	dir := t.TempDir()
	s := start(t, dir)
	path := filepath.Join(dir, TokenFile)
	// What a generated token and its file are (32 random bytes in hex,
	// mode 0600) is internal/tokenfile's to test; here, that the server
	// left one in DIR/token that its clients' checks accept.
	tok := s.token(t)
	if !strings.Contains(s.stdout.String(), "read-write token in "+path) {
		t.Errorf("the announcement does not say where the token is:\n%s", s.stdout)
	}

	anon := client[raw](t, s.url, "")
	if _, err := anon.Create(t.Context(), "a", raw(`{"spec":1}`)); !errors.Is(err, httpstore.ErrUnauthorized) {
		t.Errorf("a write without the token: %v; want ErrUnauthorized", err)
	}
	if _, err := client[raw](t, s.url, tok).Create(t.Context(), "a", raw(`{"spec":1}`)); err != nil {
		t.Errorf("a write with the token: %v", err)
	}

	if code := s.stop(t); code != exitOK {
		t.Fatalf("SIGTERM: exit %d\n%s", code, s.stderr)
	}
	s2 := start(t, dir)
	if got := s2.token(t); got != tok {
		t.Error("a restarted server made a new token: clients holding the old one are locked out")
	}
	if _, err := client[raw](t, s2.url, tok).Get(t.Context(), "a"); err != nil {
		t.Errorf("the generated token after a restart: %v", err)
	}
	for _, out := range []string{s.stdout.String(), s.stderr.String(), s2.stdout.String(), s2.stderr.String()} {
		if strings.Contains(out, tok) {
			t.Fatalf("the server printed its token:\n%s", out)
		}
	}
}

// TestTokenFilesOthersMayReadOrChangeOrThatAreNotTheServersAreRefused:
// given as DIR/token, -token-file or -read-token-file, an unsafe file
// stops the server before it serves: exit 1, the file named as unsafe,
// its content never shown. Which files are unsafe is internal/tokenfile's
// to test; here, one refused for its mode and one for being a symbolic
// link, so that each way in is seen to check the file and to open it
// through internal/tokenfile.
func TestTokenFilesOthersMayReadOrChangeOrThatAreNotTheServersAreRefused(t *testing.T) {
	const secret = "secret-0123456789abcdef"
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, path string)
	}{
		{"readable by others", func(t *testing.T, path string) { chmod(t, path, 0o644) }},
		{"a symbolic link", func(t *testing.T, path string) {
			target := filepath.Join(t.TempDir(), "elsewhere")
			if err := os.Rename(path, target); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, as := range []struct {
				name string
				args func(path string) []string
			}{
				{"DIR/token", func(string) []string { return nil }},
				{"-token-file", func(path string) []string { return []string{"-token-file", path} }},
				{"-read-token-file", func(path string) []string { return []string{"-read-token-file", path} }},
			} {
				t.Run(as.name, func(t *testing.T) {
					dir := t.TempDir()
					path := filepath.Join(dir, TokenFile)
					if as.name != "DIR/token" {
						path = filepath.Join(t.TempDir(), "given")
					}
					write(t, path, secret+"\n")
					tc.setup(t, path)
					s := launch(t, dir, as.args(path)...)
					code := s.refused(t)
					out := s.stdout.String() + s.stderr.String()
					if code != exitError || !strings.Contains(s.stderr.String(), errTokenFile.Error()+": "+path) {
						t.Errorf("exit %d; want %d and the file named as unsafe\n%s", code, exitError, out)
					}
					if strings.Contains(out, secret) || strings.Contains(s.stdout.String(), "serving") {
						t.Errorf("the server showed the file's content, or served:\n%s", out)
					}
				})
			}
		})
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// write replaces path's content, keeping its mode (0600 for a new file).
func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestGivenTokensOrNoneReplaceTheGeneratedTokenWhoseFileIsRemoved(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, TokenFile)
	if _, err := createTokenFile(own); err != nil {
		t.Fatal(err)
	}
	const given = "given-token-0123456789"
	s := start(t, dir, "-token-file", writeTokenFile(t, given))
	if _, err := os.Stat(own); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("with -token-file, the token file of an earlier run is still there: %v", err)
	}
	if _, err := client[raw](t, s.url, given).Create(t.Context(), "a", raw(`{"spec":1}`)); err != nil {
		t.Errorf("a write with the -token-file token: %v", err)
	}
	s.stop(t)

	if _, err := createTokenFile(own); err != nil {
		t.Fatal(err)
	}
	s = start(t, dir, "-token-file", own)
	if _, err := os.Stat(own); err != nil {
		t.Errorf("-token-file naming DIR/token removed it: %v", err)
	}
	s.stop(t)

	s = start(t, dir, "-insecure-no-token")
	if _, err := os.Stat(own); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("with -insecure-no-token, the token file of an earlier run is still there: %v", err)
	}
	if _, err := client[raw](t, s.url, "").Update(t.Context(), "a", raw(`{"spec":2}`), 1); err != nil {
		t.Errorf("a write without a token under -insecure-no-token: %v", err)
	}
	if !strings.Contains(s.stderr.String(), `level=WARN msg="serving without a token`) {
		t.Errorf("no warning in the log:\n%s", s.stderr)
	}
}

func TestAReadOnlyTokenReadsAndWatchesButItsWritesAreRefusedAndChangeNothing(t *testing.T) {
	const rw, ro = "writer-token-0123456789", "reader-token-0123456789"
	s := start(t, t.TempDir(), "-token-file", writeTokenFile(t, rw), "-read-token-file", writeTokenFile(t, ro))
	obj, err := client[raw](t, s.url, rw).Create(t.Context(), "a", raw(`{"spec":1}`))
	if err != nil {
		t.Fatal(err)
	}
	reader := client[raw](t, s.url, ro)
	if got, err := reader.Get(t.Context(), "a"); err != nil || got.Revision != obj.Revision {
		t.Errorf("a read with the read-only token: %v, %v", got, err)
	}
	w, err := reader.Watch(t.Context(), "", 0)
	if err != nil {
		t.Fatalf("a watch with the read-only token: %v", err)
	}
	if ev := <-w.Events(); ev.Type != store.Created || ev.Object.Key != "a" {
		t.Errorf("the read-only watch delivered %v", ev)
	}
	w.Stop()
	_, errCreate := reader.Create(t.Context(), "b", raw(`{"spec":1}`))
	_, errUpdate := reader.Update(t.Context(), "a", raw(`{"spec":2}`), obj.Revision)
	_, errDelete := reader.Delete(t.Context(), "a", obj.Revision)
	for _, err := range []error{errCreate, errUpdate, errDelete} {
		if !errors.Is(err, httpstore.ErrForbidden) {
			t.Errorf("a write with the read-only token: %v; want ErrForbidden", err)
		}
	}
	if rev, err := reader.Revision(t.Context()); err != nil || rev != obj.Revision {
		t.Errorf("the store is at revision %d (%v) after the refused writes; want %d", rev, err, obj.Revision)
	}
	if !strings.Contains(s.stdout.String(), "read-only token in ") {
		t.Errorf("the announcement does not name the read-only token file:\n%s", s.stdout)
	}
}
