package robustness_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/store/etcdstore/etcdprocs"
	"github.com/converge-go/converge/store/httpstore"
)

// storeServerPkg is the store server command, a tool of this module.
const storeServerPkg = "github.com/converge-go/converge/store/cmd/convergestore"

// storeServer is a convergestore process serving a directory of its own on
// a loopback address, killed (SIGKILL) and restarted on the same directory
// and address as a test says. Its methods are safe for concurrent use.
//
// up tells its users whether it serves: Up returns a channel that is
// closed once the running process has announced its URL, and a new, open
// one from the moment Kill is called until the next start has announced.
type storeServer struct {
	bin, dir, addr string
	url, token     string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when the running process has exited
	up     chan struct{}
	runs   int
	logs   []*syncbuf.Buffer // each run's output
	next   []string          // more flags for the next launch only
}

// buildStoreServer builds convergestore into a temporary directory of t
// and returns its path (a link, with a warm build cache).
func buildStoreServer(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "convergestore")
	if out, err := exec.Command("go", "build", "-o", bin, storeServerPkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", storeServerPkg, err, out)
	}
	return bin
}

// startStoreServer builds convergestore and starts it on a new directory
// and a free loopback port, with the HTTP tests' heartbeat. At t's cleanup
// the process is killed, and its output logged if t failed.
func startStoreServer(t testing.TB) *storeServer {
	t.Helper()
	addrs, err := etcdprocs.FreeAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	s := &storeServer{bin: buildStoreServer(t), dir: filepath.Join(t.TempDir(), "store"), addr: addrs[0], up: make(chan struct{})}
	s.url = "http://" + s.addr + "/store"
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("convergestore output (%d runs):\n%s", s.runs, s.output())
		}
	})
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	tok, err := os.ReadFile(filepath.Join(s.dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	s.token = strings.TrimSpace(string(tok))
	return s
}

// start starts a process on the server's directory and address and waits,
// up to procPatience, until it announces that it serves; then Up's
// channel is closed. An address still held (by another program's socket)
// is tried again within that time.
func (s *storeServer) start() error {
	deadline := time.Now().Add(procPatience)
	for {
		out, exited, err := s.launch()
		if err != nil {
			return err
		}
		err = s.waitServing(out, exited, deadline)
		if err == nil || !strings.Contains(out.String(), "address already in use") || time.Now().After(deadline) {
			return err
		}
	}
}

// launch starts one process and returns its output and exit channel.
func (s *storeServer) launch() (*syncbuf.Buffer, chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := new(syncbuf.Buffer)
	args := append([]string{"-dir", s.dir, "-addr", s.addr, "-heartbeat", httpHeartbeat.String()}, s.next...)
	s.next = nil
	cmd := exec.Command(s.bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start convergestore: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	s.runs++
	s.logs = append(s.logs, out)
	return out, exited, nil
}

// waitServing waits until the process whose output is out announces its
// URL, and then closes Up's channel.
func (s *storeServer) waitServing(out *syncbuf.Buffer, exited chan struct{}, deadline time.Time) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(out.String(), "convergestore: serving "+s.url) {
		select {
		case <-exited:
			return fmt.Errorf("convergestore exited before serving:\n%s", out)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("convergestore did not serve within %v:\n%s", procPatience, out)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.up)
	return nil
}

// Up returns a channel closed while the server serves (see storeServer).
func (s *storeServer) Up() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.up
}

// waitUp waits until the server serves or ctx ends.
func (s *storeServer) waitUp(ctx context.Context) error {
	select {
	case <-s.Up():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// signal sends sig to the running process.
func (s *storeServer) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd.Process.Signal(sig)
}

// Kill kills the running process with SIGKILL and waits for it to exit.
// Up's channel is open from before the signal on.
func (s *storeServer) Kill() error {
	s.mu.Lock()
	select {
	case <-s.up:
		s.up = make(chan struct{})
	default:
	}
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-exited
	return nil
}

// Restart kills the running process and starts a new one on the same
// directory and address.
func (s *storeServer) Restart() error {
	if err := s.Kill(); err != nil {
		return err
	}
	return s.start()
}

// stop kills the running process, if any, and waits for it.
func (s *storeServer) stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// output returns every run's output, each under a heading.
func (s *storeServer) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for i, out := range s.logs {
		fmt.Fprintf(&b, "--- run %d\n%s", i+1, out)
	}
	return b.String()
}

// storeClient returns a client of the server's store with its token, the
// HTTP tests' watch timeout and a transport of its own, closed at t's
// cleanup.
func storeClient[T any](t testing.TB, s *storeServer) *httpstore.Client[T] {
	t.Helper()
	c, err := httpstore.New[T](s.url, httpstore.WithToken(s.token), httpstore.WithWatchTimeout(httpWatchTimeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
