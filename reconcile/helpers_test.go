package reconcile

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
	"github.com/stretchr/testify/require"
)

// item is the object type of these tests.
type item struct {
	Want  int
	Owner string
	Seen  int // status: the Want the reconciler last acted on
}

// faulty wraps s in a fault store that a test can take down (every call
// failing with ErrUnavailable) and bring back, and whose watches it can
// break.
func faulty(t *testing.T, s store.Store[*item]) *faultstore.Store[*item] {
	t.Helper()
	f, err := faultstore.New(s, faultstore.Options{})
	require.NoError(t, err)
	return f
}

// put creates or replaces key with v.
func put(t *testing.T, s store.Store[*item], key string, v *item) int64 {
	t.Helper()
	obj, err := store.CreateOrUpdate(context.Background(), s, key, func(*item, bool) (*item, error) { return v, nil })
	require.NoError(t, err)
	return obj.Revision
}

// del deletes key.
func del(t *testing.T, s store.Store[*item], key string) int64 {
	t.Helper()
	obj, err := s.Get(context.Background(), key)
	require.NoError(t, err)
	rev, err := s.Delete(context.Background(), key, obj.Revision)
	require.NoError(t, err)
	return rev
}

// idleController returns a controller over an empty memory store with a
// reconciler that does nothing, for tests that drive its bookkeeping
// directly without running it.
func idleController[T any](t *testing.T, name string) *Controller[T] {
	t.Helper()
	c, err := New(store.NewMemory[T](), ReconcilerFunc[T](func(context.Context, Request[T]) (Result, error) {
		return Result{}, nil
	}), Options[T]{Name: name})
	require.NoError(t, err)
	return c
}

// recorder is a reconciler that records the requests it receives.
type recorder struct {
	mu       sync.Mutex
	requests []Request[*item]
	fn       func(ctx context.Context, req Request[*item]) (Result, error)
}

func (r *recorder) Reconcile(ctx context.Context, req Request[*item]) (Result, error) {
	r.mu.Lock()
	r.requests = append(r.requests, req)
	r.mu.Unlock()
	if r.fn != nil {
		return r.fn(ctx, req)
	}
	return Result{}, nil
}

func (r *recorder) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, req := range r.requests {
		if req.Key == key {
			n++
		}
	}
	return n
}

func (r *recorder) reset() {
	r.mu.Lock()
	r.requests = nil
	r.mu.Unlock()
}

func (r *recorder) last(key string) (Request[*item], bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.requests) - 1; i >= 0; i-- {
		if r.requests[i].Key == key {
			return r.requests[i], true
		}
	}
	return Request[*item]{}, false
}

// start runs c until the returned stop function is called; stop waits for
// Run to return and checks its error.
func start[T any](t *testing.T, c *Controller[T]) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	require.NoError(t, c.WaitForSync(context.Background()))
	return func() {
		cancel()
		require.NoError(t, <-done)
	}
}

// advance lets fake time pass inside a synctest bubble.
func advance(d time.Duration) { <-time.After(d) }

// setLast gives key a last reconcile that ended with outcome, for an
// object at rev, leaving its pending change as it is.
func setLast[T any](c *Controller[T], key string, outcome Outcome, rev int64) {
	var err error
	if outcome.Failed() {
		err = errors.New("failed")
	}
	now := time.Now()
	c.led.recordLast(c.led.recordOf(key), ending{key: key, revision: rev, outcome: outcome, err: err, start: now}, outcome == Success, now)
}
