package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/converge-go/converge/examples/internal/poll"
)

// This file runs the operator as a process of its own, as the demo and the
// tests do: started, stopped with SIGTERM, killed with SIGKILL as a crash
// would, and started again.

// operatorProc is an operator process.
type operatorProc struct {
	cmd *exec.Cmd
	// base is the URL of its HTTP server (probes, debug page).
	base string
	done chan struct{}
}

// startOperatorProc starts "exe operator -dir dir -addr 127.0.0.1:0 args..."
// with env added to this process's environment, and returns once it
// serves and is ready, or fails after limit (killing it). logs receives
// its output (nil: discarded); give an *os.File, since the dumps it starts
// write there too and outlive it.
func startOperatorProc(ctx context.Context, exe string, env []string, dir string, logs io.Writer, limit time.Duration, args ...string) (*operatorProc, error) {
	urlFile := filepath.Join(dir, URLFile)
	if err := os.Remove(urlFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	cmd := exec.Command(exe, append([]string{"operator", "-dir", dir, "-addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &operatorProc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	err := until(ctx, limit, "the operator ready", func() (bool, error) {
		select {
		case <-p.done:
			return false, errors.New("the operator exited")
		default:
		}
		b, err := os.ReadFile(urlFile)
		p.base = strings.TrimSpace(string(b))
		return err == nil && p.base != "" && probe(ctx, p.base+"/readyz") == http.StatusOK, nil
	})
	if err != nil {
		p.kill()
		return nil, err
	}
	return p, nil
}

// pid is the process's id.
func (p *operatorProc) pid() int { return p.cmd.Process.Pid }

// kill ends the process with SIGKILL and reaps it.
func (p *operatorProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop asks the process to shut down (SIGTERM) and waits for it, killing
// it after limit.
func (p *operatorProc) stop(limit time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(limit):
		p.kill()
		return fmt.Errorf("the operator still ran %v after SIGTERM: killed", limit)
	}
}

// probe returns the status code of a GET of url, 0 if none came.
func probe(ctx context.Context, url string) int {
	code, _ := get(ctx, url)
	return code
}

// get returns the status code and body of a GET of url.
func get(ctx context.Context, url string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, ""
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// until calls cond every 50ms until it reports true or an error, ctx ends
// or limit has passed (demo.Until).
func until(ctx context.Context, limit time.Duration, what string, cond func() (bool, error)) error {
	return poll.Until(ctx, limit, 50*time.Millisecond, what, cond)
}
