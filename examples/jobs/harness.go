package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/converge-go/converge/examples/internal/procs"
)

// daemonProc is a daemon run as a child process, as the demo and the tests
// run it: to be killed with SIGKILL and started again (internal/procs).
type daemonProc struct {
	*procs.Proc
	// base is the URL of its HTTP server, url its store's ("" for a
	// daemon on a store server, which serves none).
	base, url string
}

// startDaemon starts "exe daemon -dir dir -addr 127.0.0.1:0 args..." with
// env added to this process's environment, and returns once it serves
// and its controller is ready (or fails after limit, killing it).
func startDaemon(ctx context.Context, exe string, env []string, dir string, logs io.Writer, limit time.Duration, args ...string) (*daemonProc, error) {
	urlFile := filepath.Join(dir, URLFile)
	if err := os.Remove(urlFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	cmd := exec.Command(exe, append([]string{"daemon", "-dir", dir, "-addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logs, logs
	p, base, err := procs.StartServing(ctx, cmd, filepath.Join(dir, HTTPFile), limit)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	d := &daemonProc{Proc: p, base: base}
	// The daemon writes URLFile, if it serves a store, before HTTPFile.
	if b, err := os.ReadFile(urlFile); err == nil {
		d.url = strings.TrimSpace(string(b))
	}
	return d, nil
}
