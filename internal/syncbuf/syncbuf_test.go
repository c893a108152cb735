package syncbuf_test

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/converge-go/converge/internal/syncbuf"
)

// A logger shared by goroutines writes every line whole (run with -race).
func TestConcurrentWritesKeepEveryLineWhole(t *testing.T) {
	var buf syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				log.Info("line", "writer", i, "n", j)
				_ = buf.String()
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 400 {
		t.Fatalf("%d lines, want 400", len(lines))
	}
	for _, l := range lines {
		if !strings.Contains(l, "msg=line writer=") {
			t.Fatalf("a line was torn: %q", l)
		}
	}
}

func ExampleBuffer() {
	var buf syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	done := make(chan struct{})
	go func() {
		log.Info("from a goroutine")
		close(done)
	}()
	<-done
	fmt.Print(buf.String())
	// Output: level=INFO msg="from a goroutine"
}
