package debugpage_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
)

// world is a controller over a memory store whose reconciler does what
// each value says: "ok" succeeds, "fail:MSG" fails with MSG,
// "terminal:MSG" fails terminally with MSG, "block" blocks until the
// world is released.
type world struct {
	s       *store.Memory[string]
	c       *reconcile.Controller[string]
	release chan struct{}
	done    chan error
	stop    context.CancelFunc
	calls   atomic.Int64
}

// newWorld starts a controller over values, with one worker and a backoff
// of an hour, so a failing key stays delayed.
func newWorld(tb testing.TB, name string, workers int, values map[string]string) *world {
	ctx, stop := context.WithCancel(context.Background())
	w := &world{s: store.NewMemory[string](), release: make(chan struct{}), done: make(chan error, 1), stop: stop}
	w.put(tb, values)
	rec := reconcile.ReconcilerFunc[string](func(ctx context.Context, req reconcile.Request[string]) (reconcile.Result, error) {
		defer w.calls.Add(1)
		switch v := req.Object.Value; {
		case v == "block":
			select {
			case <-w.release:
			case <-ctx.Done():
			}
		case strings.HasPrefix(v, "fail:"):
			return reconcile.Result{}, errors.New(strings.TrimPrefix(v, "fail:"))
		case strings.HasPrefix(v, "terminal:"):
			return reconcile.Result{}, reconcile.Terminal(errors.New(strings.TrimPrefix(v, "terminal:")))
		}
		return reconcile.Result{}, nil
	})
	c, err := reconcile.New(w.s, rec, reconcile.Options[string]{
		Name: name, Workers: workers, RateLimiter: queue.NewExponential[string](time.Hour, time.Hour, 0),
	})
	if err != nil {
		tb.Fatal(err)
	}
	w.c = c
	go func() { w.done <- c.Run(ctx) }()
	if err := c.WaitForSync(ctx); err != nil {
		tb.Fatal(err)
	}
	return w
}

func (w *world) put(tb testing.TB, values map[string]string) {
	for k, v := range values {
		if _, err := w.s.Create(context.Background(), k, v); err != nil {
			tb.Fatal(err)
		}
	}
}

// close releases blocked reconciles and stops the controller.
func (w *world) close() {
	close(w.release)
	w.stop()
	<-w.done
}
