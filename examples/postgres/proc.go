package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/converge-go/converge/examples/internal/poll"
	"github.com/converge-go/converge/examples/internal/procs"
)

// operatorProc is the operator run as a process of its own, as the demo
// and the tests run it: started, stopped with SIGTERM, killed with
// SIGKILL as a crash would, and started again (internal/procs).
type operatorProc struct {
	*procs.Proc
	// base is the URL of its HTTP server (probes, debug page).
	base string
}

// startOperatorProc starts "exe operator -dir dir -addr 127.0.0.1:0 args..."
// with env added to this process's environment, and returns once it
// serves and is ready, or fails after limit (killing it). logs receives
// its output (nil: discarded); give an *os.File, since the dumps it starts
// write there too and outlive it.
func startOperatorProc(ctx context.Context, exe string, env []string, dir string, logs io.Writer, limit time.Duration, args ...string) (*operatorProc, error) {
	cmd := exec.Command(exe, append([]string{"operator", "-dir", dir, "-addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logs, logs
	p, base, err := procs.StartServing(ctx, cmd, filepath.Join(dir, URLFile), limit)
	if err != nil {
		return nil, fmt.Errorf("the operator: %w", err)
	}
	return &operatorProc{Proc: p, base: base}, nil
}

// until calls cond every 50ms until it reports true or an error, ctx ends
// or limit has passed (poll.Until).
func until(ctx context.Context, limit time.Duration, what string, cond func() (bool, error)) error {
	return poll.Until(ctx, limit, 50*time.Millisecond, what, cond)
}
