package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/store/httpstore"
)

// The binaries the tests run as a shell user runs them, built once by
// TestMain: convergestore, and convergectl for the session of the doc.
var binary, ctlBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "convergestore")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary, ctlBinary = filepath.Join(dir, "convergestore"), filepath.Join(dir, "convergectl")
	for _, b := range []struct{ out, pkg string }{
		{binary, "."},
		{ctlBinary, "github.com/converge-go/converge/store/cmd/convergectl"},
	} {
		if out, err := exec.Command("go", "build", "-o", b.out, b.pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", b.pkg, err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	if code == 0 {
		// The clients' idle connections close in their own time.
		err := goleak.Find(
			goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		)
		if err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// patience bounds every wait on a server process: a safety net against a
// hanging test, not an assertion about speed.
const patience = 30 * time.Second

// server is a convergestore process.
type server struct {
	cmd            *exec.Cmd
	dir, url       string
	stdout, stderr *syncbuf.Buffer
	exited         chan struct{} // closed once the process has exited
}

// start starts convergestore -dir dir -addr 127.0.0.1:0 args... and waits
// until it announces its URL. The process is killed at t's cleanup if it
// still runs.
func start(t *testing.T, dir string, args ...string) *server {
	t.Helper()
	s := launch(t, dir, args...)
	deadline := time.Now().Add(patience)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for s.url == "" {
		select {
		case <-s.exited:
			t.Fatalf("convergestore exited with %d before serving:\n%s%s", s.cmd.ProcessState.ExitCode(), s.stdout, s.stderr)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			t.Fatalf("convergestore announced no URL within %v:\n%s%s", patience, s.stdout, s.stderr)
		}
		for line := range strings.Lines(s.stdout.String()) {
			if u, ok := strings.CutPrefix(strings.TrimSpace(line), "convergestore: serving "); ok {
				s.url = u
			}
		}
	}
	return s
}

// launch starts convergestore -dir dir -addr 127.0.0.1:0 args..., killed
// at t's cleanup if it still runs.
func launch(t *testing.T, dir string, args ...string) *server {
	t.Helper()
	s := &server{dir: dir, stdout: new(syncbuf.Buffer), stderr: new(syncbuf.Buffer), exited: make(chan struct{})}
	s.cmd = exec.Command(binary, append([]string{"-dir", dir, "-addr", "127.0.0.1:0"}, args...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.stdout, s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited
	})
	return s
}

// wait waits for the process to exit and returns its exit code.
func (s *server) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-s.exited:
	case <-time.After(patience):
		t.Fatalf("convergestore still running after %v:\n%s", patience, s.stderr)
	}
	return s.cmd.ProcessState.ExitCode()
}

// refused waits for a process that must not serve to exit, and returns
// its exit code; it fails t at once if the process announces that it
// serves.
func (s *server) refused(t *testing.T) int {
	t.Helper()
	waitFor(t, "convergestore's exit", func() bool {
		if strings.Contains(s.stdout.String(), "convergestore: serving ") {
			t.Fatalf("convergestore serves; want it refused:\n%s%s", s.stdout, s.stderr)
		}
		select {
		case <-s.exited:
			return true
		default:
			return false
		}
	})
	return s.cmd.ProcessState.ExitCode()
}

// stop sends SIGTERM and returns the exit code.
func (s *server) stop(t *testing.T) int {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	return s.wait(t)
}

// result is what one run of a binary gave.
type result struct {
	code           int
	stdout, stderr string
}

// runBinary runs bin with args to its end, with stdin.
func runBinary(t *testing.T, bin, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %s %v: %v", bin, args, err)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errOut.String()}
}

// token returns the token in the server's generated token file.
func (s *server) token(t *testing.T) string {
	t.Helper()
	tok, ok, err := readTokenFile(filepath.Join(s.dir, TokenFile))
	if err != nil || !ok {
		t.Fatalf("the token file: %v (exists %v)", err, ok)
	}
	return tok
}

// client returns a client of the server's store with tok (none if empty).
func client[T any](t *testing.T, url, tok string, opts ...httpstore.ClientOption) *httpstore.Client[T] {
	t.Helper()
	if tok != "" {
		opts = append(opts, httpstore.WithToken(tok))
	}
	c, err := httpstore.New[T](url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// writeTokenFile writes tok to a new file of mode 0600 and returns its path.
func writeTokenFile(t *testing.T, tok string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitFor polls cond until it holds, failing t after patience.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, patience)
		}
		<-tick.C
	}
}
