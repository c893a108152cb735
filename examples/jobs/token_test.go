package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore"
)

// dirClient returns a client of the daemon serving url from dir, with the
// token the daemon generated there.
func dirClient(t *testing.T, dir, url string) *httpstore.Client[*Job] {
	t.Helper()
	return tokenClient(t, url, daemonTokenOf(t, dir))
}

// jobsCmd runs "jobs args..." (a copy of the test binary) with env added
// (and no $JOBS_TOKEN unless env sets one), and returns its combined output
// and exit code.
func jobsCmd(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), exe, args...)
	cmd.Env = append(os.Environ(), append([]string{testMainEnv + "=1", "JOBS_TOKEN="}, env...)...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

func TestDaemonWithoutATokenGeneratesAPrivateOneThatClientsReadAndRefusesOthers(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var logs syncbuf.Buffer
	env := []string{testMainEnv + "=1", "JOBS_TOKEN="}
	d, err := startDaemon(t.Context(), exe, env, dir, &logs, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.Kill() }()
	// What a generated token and its file are (32 random bytes in hex,
	// mode 0600) is internal/tokenfile's to test; here, that the daemon
	// left one in DIR/token that its clients' checks accept.
	tok := daemonTokenOf(t, dir)

	anon, err := httpstore.New[*Job](d.url)
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	if _, err := anon.Create(t.Context(), KeyPrefix+"anon", &Job{Meta: apistore.Meta{Generation: 1}, Spec: Spec{Command: "true"}}); !errors.Is(err, httpstore.ErrUnauthorized) {
		t.Errorf("a write without the token: %v; want ErrUnauthorized", err)
	}

	// The client commands find the token beside daemon.url.
	out, code := jobsCmd(t, nil, "run", "-dir", dir, "hello", "--", "true")
	out2, code2 := jobsCmd(t, nil, "list", "-dir", dir)
	if code != 0 || code2 != 0 || !strings.Contains(out2, "hello") {
		t.Errorf("jobs run: %d\n%s\njobs list: %d\n%s", code, out, code2, out2)
	}

	// A restarted daemon keeps the token, so clients waiting across the
	// restart keep working.
	d.Kill()
	if d, err = startDaemon(t.Context(), exe, env, dir, &logs, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := dirClient(t, dir, d.url).Get(t.Context(), KeyPrefix+"hello"); err != nil {
		t.Errorf("the generated token after a restart: %v", err)
	}
	for what, text := range map[string]string{"the daemon's log": logs.String(), "jobs run": out, "jobs list": out2} {
		if strings.Contains(text, tok) {
			t.Errorf("%s shows the token", what)
		}
	}
}

func TestInsecureNoTokenServesEveryoneWarnsAndRemovesTheTokenFile(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := createTokenFile(filepath.Join(dir, TokenFile)); err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	d, err := startDaemon(t.Context(), exe, []string{testMainEnv + "=1"}, dir, &logs, time.Minute, "-insecure-no-token")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Kill()
	if _, err := os.Stat(filepath.Join(dir, TokenFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the token file of an earlier daemon is still there: %v", err)
	}
	out, code := jobsCmd(t, nil, "add", "-dir", dir, "hello", "--", "true")
	if code != 0 {
		t.Errorf("jobs add without a token: %d\n%s", code, out)
	}
	if !strings.Contains(logs.String(), "level=WARN msg=\"serving without a token") {
		t.Errorf("no warning in the daemon's log:\n%s", logs.String())
	}
}

// TestDaemonAndClientsRefuseATokenFileOthersCanReadOrThatIsNotTheirs:
// the daemon does not start and the client commands exit 1, naming the
// file as unsafe. Which files are unsafe is internal/tokenfile's to test;
// here, one refused for its mode and one for being a symbolic link, so that
// both the daemon and its clients are seen to check the file and to open
// it through internal/tokenfile.
func TestDaemonAndClientsRefuseATokenFileOthersCanReadOrThatIsNotTheirs(t *testing.T) {
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
			dir := t.TempDir()
			path := filepath.Join(dir, TokenFile)
			if _, err := createTokenFile(path); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, path)
			err := RunDaemon(t.Context(), DaemonConfig{Dir: dir, Addr: "127.0.0.1:0", Workers: 1, Grace: time.Second,
				BackoffBase: time.Second, BackoffMax: time.Second, Executable: "/nonexistent"})
			if !errors.Is(err, errTokenFile) || !strings.Contains(err.Error(), path) {
				t.Errorf("RunDaemon: %v; want errTokenFile, naming %s", err, path)
			}
			if err := os.WriteFile(filepath.Join(dir, URLFile), []byte("http://127.0.0.1:1/store\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			out, code := jobsCmd(t, []string{"JOBS_TOKEN="}, "list", "-dir", dir)
			if code != 1 || !strings.Contains(out, errTokenFile.Error()+": "+path) {
				t.Errorf("jobs list with that token file: exit %d\n%s", code, out)
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

func TestATokenAndInsecureNoTokenTogetherAreRefused(t *testing.T) {
	err := RunDaemon(t.Context(), DaemonConfig{Dir: t.TempDir(), Token: "t", InsecureNoToken: true})
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("RunDaemon: %v; want ErrInvalid", err)
	}
	if out, code := jobsCmd(t, nil, "daemon", "-dir", t.TempDir(), "-token", "t", "-insecure-no-token"); code != 2 {
		t.Errorf("jobs daemon -token t -insecure-no-token: exit %d; want 2\n%s", code, out)
	}
}

func TestHelpNeverShowsTheToken(t *testing.T) {
	const secret = "do-not-show-me-0123456789"
	for _, cmd := range []string{"daemon", "add", "run", "wait", "list", "delete"} {
		out, code := jobsCmd(t, []string{"JOBS_TOKEN=" + secret}, cmd, "-h")
		if code != 2 || !strings.Contains(out, "-token") {
			t.Errorf("jobs %s -h: exit %d; want 2 and the flags\n%s", cmd, code, out)
		}
		if bytes.Contains([]byte(out), []byte(secret)) {
			t.Errorf("jobs %s -h shows $JOBS_TOKEN:\n%s", cmd, out)
		}
	}
}
