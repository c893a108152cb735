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
)

// daemonProc is a daemon run as a child process, as the demo and the tests
// run it: to be killed with SIGKILL and started again.
type daemonProc struct {
	cmd *exec.Cmd
	// base is the URL of its HTTP server, url its store's ("" for a
	// daemon on a store server, which serves none).
	base, url string
	done      chan struct{}
	err       error // Wait's, once done is closed
}

// startDaemon starts "exe daemon -dir dir -addr 127.0.0.1:0 args..." with
// env added to this process's environment, and returns once it serves
// and its controller is ready (or fails after limit).
func startDaemon(ctx context.Context, exe string, env []string, dir string, logs io.Writer, limit time.Duration, args ...string) (*daemonProc, error) {
	httpFile, urlFile := filepath.Join(dir, HTTPFile), filepath.Join(dir, URLFile)
	for _, f := range []string{httpFile, urlFile} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	cmd := exec.Command(exe, append([]string{"daemon", "-dir", dir, "-addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d := &daemonProc{cmd: cmd, done: make(chan struct{})}
	go func() { d.err = cmd.Wait(); close(d.done) }()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		// The daemon writes URLFile, if it serves a store, before HTTPFile.
		if b, err := os.ReadFile(httpFile); err == nil {
			d.base = strings.TrimSpace(string(b))
			if b, err := os.ReadFile(urlFile); err == nil {
				d.url = strings.TrimSpace(string(b))
			}
			if ready(ctx, d.base+"/readyz") {
				return d, nil
			}
		}
		select {
		case <-tick.C:
		case <-d.done:
			return nil, fmt.Errorf("daemon exited before it was ready: %v", d.err)
		case <-deadline.C:
			d.kill()
			return nil, fmt.Errorf("daemon not ready after %v", limit)
		case <-ctx.Done():
			d.kill()
			return nil, ctx.Err()
		}
	}
}

func ready(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// pid returns the daemon's process id.
func (d *daemonProc) pid() int { return d.cmd.Process.Pid }

// kill ends the daemon with SIGKILL, as a crash would, and reaps it.
func (d *daemonProc) kill() {
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
}

// stop asks the daemon to shut down (SIGTERM) and returns its exit error,
// or kills it after limit.
func (d *daemonProc) stop(limit time.Duration) error {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-d.done:
		return d.err
	case <-t.C:
		d.kill()
		return fmt.Errorf("daemon still running %v after SIGTERM: killed", limit)
	}
}
