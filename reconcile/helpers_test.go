package reconcile

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// item is the object type of these tests.
type item struct {
	Want  int
	Owner string
	Seen  int // status: the Want the reconciler last acted on
}

// flakyStore wraps a store so that a test can break its watches and take it
// down (every call failing with ErrUnavailable) and bring it back.
type flakyStore[T any] struct {
	store.Store[T]
	mu       sync.Mutex
	down     bool
	watchers []*flakyWatcher[T]
}

func (f *flakyStore[T]) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return fmt.Errorf("%w: injected outage", store.ErrUnavailable)
	}
	return nil
}

// setDown takes the store down (breaking every watch) or brings it back.
func (f *flakyStore[T]) setDown(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
	if down {
		f.breakWatches()
	}
}

// breakWatches ends every open watch with ErrUnavailable.
func (f *flakyStore[T]) breakWatches() {
	f.mu.Lock()
	ws := f.watchers
	f.watchers = nil
	f.mu.Unlock()
	for _, w := range ws {
		w.breakOff()
	}
}

func (f *flakyStore[T]) Get(ctx context.Context, key string) (store.Object[T], error) {
	if err := f.err(); err != nil {
		return store.Object[T]{}, err
	}
	return f.Store.Get(ctx, key)
}

func (f *flakyStore[T]) List(ctx context.Context, prefix string) ([]store.Object[T], int64, error) {
	if err := f.err(); err != nil {
		return nil, 0, err
	}
	return f.Store.List(ctx, prefix)
}

func (f *flakyStore[T]) Create(ctx context.Context, key string, v T, g ...store.Guard) (store.Object[T], error) {
	if err := f.err(); err != nil {
		return store.Object[T]{}, err
	}
	return f.Store.Create(ctx, key, v, g...)
}

func (f *flakyStore[T]) Update(ctx context.Context, key string, v T, rev int64, g ...store.Guard) (store.Object[T], error) {
	if err := f.err(); err != nil {
		return store.Object[T]{}, err
	}
	return f.Store.Update(ctx, key, v, rev, g...)
}

func (f *flakyStore[T]) Delete(ctx context.Context, key string, rev int64, g ...store.Guard) (int64, error) {
	if err := f.err(); err != nil {
		return 0, err
	}
	return f.Store.Delete(ctx, key, rev, g...)
}

func (f *flakyStore[T]) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[T], error) {
	if err := f.err(); err != nil {
		return nil, err
	}
	inner, err := f.Store.Watch(ctx, prefix, after)
	if err != nil {
		return nil, err
	}
	w := &flakyWatcher[T]{inner: inner, events: make(chan store.Event[T]), broken: make(chan struct{})}
	go w.forward()
	f.mu.Lock()
	f.watchers = append(f.watchers, w)
	f.mu.Unlock()
	return w, nil
}

type flakyWatcher[T any] struct {
	inner  store.Watcher[T]
	events chan store.Event[T]
	broken chan struct{}
	once   sync.Once
	err    error
}

func (w *flakyWatcher[T]) forward() {
	defer close(w.events)
	for {
		select {
		case ev, ok := <-w.inner.Events():
			if !ok {
				w.err = w.inner.Err()
				return
			}
			select {
			case w.events <- ev:
			case <-w.broken:
				w.err = fmt.Errorf("%w: watch broken", store.ErrUnavailable)
				w.inner.Stop()
				return
			}
		case <-w.broken:
			w.err = fmt.Errorf("%w: watch broken", store.ErrUnavailable)
			w.inner.Stop()
			return
		}
	}
}

func (w *flakyWatcher[T]) breakOff()                     { w.once.Do(func() { close(w.broken) }) }
func (w *flakyWatcher[T]) Events() <-chan store.Event[T] { return w.events }
func (w *flakyWatcher[T]) Err() error                    { return w.err }
func (w *flakyWatcher[T]) Stop() {
	w.breakOff()
	for range w.events {
	}
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
