package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/examples/internal/poll"
	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/store/apistore"
)

// A served watch ends when the daemon's server begins its shutdown, so an
// open watch does not hold the daemon until the server's fallback deadline
// (half the manager's shutdown timeout, Grace+30s) closes it. The daemon's
// Grace puts that deadline past the test's run: a daemon held by the watch
// would not return within the generous bound below, a released one
// returns at once.
func TestOpenWatchDoesNotHoldTheDaemonsShutdown(t *testing.T) {
	t.Setenv(testMainEnv, "1") // the shims the daemon starts run main
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var logs syncbuf.Buffer
	ran := make(chan error, 1)
	go func() {
		ran <- RunDaemon(ctx, DaemonConfig{Dir: dir, Addr: "127.0.0.1:0", Workers: 1, Grace: 20 * time.Minute,
			BackoffBase: time.Second, BackoffMax: time.Second, Executable: exe, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	}()
	var url string
	err = poll.Until(ctx, time.Minute, 10*time.Millisecond, "daemon.url", func() (bool, error) {
		b, err := os.ReadFile(filepath.Join(dir, URLFile))
		url = strings.TrimSpace(string(b))
		return err == nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c := dirClient(t, dir, url)
	w, err := c.Watch(t.Context(), "marks/", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// The watch's first event proves its stream is open on the server.
	if _, err := c.Create(t.Context(), "marks/open", &Job{Meta: apistore.Meta{Generation: 1}}); err != nil {
		t.Fatal(err)
	}
	if ev, ok := <-w.Events(); !ok || ev.Object.Key != "marks/open" {
		t.Fatalf("the watch's first event: %+v %v (%v)", ev, ok, w.Err())
	}
	stop()
	select {
	case err := <-ran:
		if err != nil {
			t.Errorf("RunDaemon with an open watch: %v\n%s", err, logs.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("RunDaemon still runs 2 minutes after its context ended: the open watch holds its shutdown\n%s", logs.String())
	}
}
