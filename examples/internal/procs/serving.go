package procs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/converge-go/converge/examples/internal/poll"
)

// ReadyPath is the readiness probe StartServing asks the server for, as
// reconcile/manager serves it.
const ReadyPath = "/readyz"

// probeInterval is how often StartServing reads the URL file and probes.
const probeInterval = 20 * time.Millisecond

// StartServing starts cmd, a program that writes the base URL of its HTTP
// server (one line) to the file urlFile once it serves, and returns its
// Proc and that URL once base+ReadyPath answers 200. The file is removed
// first, so that one an earlier process left is never read. On failure
// (cmd ends first: ErrExited; limit passes; ctx ends) the process is
// killed and reaped before StartServing returns.
func StartServing(ctx context.Context, cmd *exec.Cmd, urlFile string, limit time.Duration) (*Proc, string, error) {
	if err := os.Remove(urlFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, "", err
	}
	p, err := Start(cmd)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var base string
	err = poll.Until(ctx, limit, probeInterval, "serving", func() (bool, error) {
		select {
		case <-p.done:
			return false, fmt.Errorf("%w: %v", ErrExited, p.err)
		default:
		}
		b, err := os.ReadFile(urlFile)
		base = strings.TrimSpace(string(b))
		return err == nil && base != "" && Probe(ctx, base+ReadyPath) == http.StatusOK, nil
	})
	if err != nil {
		p.Kill()
		return nil, "", err
	}
	return p, base, nil
}

// Probe returns the status code of a GET of url, 0 if no response came.
func Probe(ctx context.Context, url string) int {
	code, _ := Get(ctx, url)
	return code
}

// maxBody bounds the body Get reads.
const maxBody = 1 << 20

// Get returns the status code and body (its first MiB) of a GET of url
// with http.DefaultClient; 0 and "" if no response came.
func Get(ctx context.Context, url string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, ""
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	return resp.StatusCode, string(b)
}
