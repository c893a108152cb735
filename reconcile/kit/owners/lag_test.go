package owners_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/owners"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/faultstore"
)

// TestAChildIsCollectedWhenItsOwnerGoesAheadOfTheCache: an owner the
// collector deletes itself is gone for the children it then wakes, though
// its cache has yet to see the deletion: they are collected. Nothing else
// would wake them: here the owner's key is handed out again while it is
// being deleted (an owner created again under the key of its own owner
// wakes it), so the controller hands it out as deleted from its own write,
// and the deletion's event, when the cache catches up, wakes no one.
func TestAChildIsCollectedWhenItsOwnerGoesAheadOfTheCache(t *testing.T) {
	each(t, func(t *testing.T, w world) {
		w.start(t, owners.CollectorOptions{Workers: 2, HeartbeatInterval: time.Minute})
		w.create(t, "rs/web", nil)
		w.create(t, "pods/a", nil, w.ref(t, "rs/web", true))
		w.create(t, "vols/a", nil, w.ref(t, "pods/a", true))
		w.settle(t)
		var delayed atomic.Bool
		w.faults().SetPlan(func(c faultstore.Call) faultstore.Decision {
			if c.Op == faultstore.OpDelete && c.Key == "pods/a" && delayed.CompareAndSwap(false, true) {
				return faultstore.Decision{Delay: 100 * time.Millisecond}
			}
			return faultstore.Decision{}
		})

		w.remove(t, "rs/web", apistore.Background)
		w.settle(t) // the collector's deletion of pods/a waits
		require.True(t, delayed.Load())
		w.create(t, "rs/web", nil) // another rs/web, whose reconcile wakes pods/a
		w.settle(t)
		w.holdWatches(true)
		<-time.After(100 * time.Millisecond)
		w.settle(t) // pods/a is deleted, and vols/a judged, the cache behind
		w.holdWatches(false)
		w.settle(t)
		require.Equal(t, []string{"rs/web"}, w.keys(t), "vols/a outlived its owner")
	})
}

// lagging is the faultstore in front of the collectors, whose watches hold
// their events back while it is held (hold): the collectors' cache lags
// behind the store, while their calls and writes go through at once.
type lagging[T any] struct {
	*faultstore.Store[T]
	mu      sync.Mutex
	held    bool
	changed chan struct{} // closed and replaced when held changes
}

func newLagging[T any](s *faultstore.Store[T]) *lagging[T] {
	return &lagging[T]{Store: s, changed: make(chan struct{})}
}

// hold holds the watches' events back, or lets them go on in order.
func (l *lagging[T]) hold(held bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = held
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *lagging[T]) state() (bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held, l.changed
}

// Watch is the faultstore's watch, its events held back while l is held.
func (l *lagging[T]) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[T], error) {
	inner, err := l.Store.Watch(ctx, prefix, after)
	if err != nil {
		return nil, err
	}
	w := &lagWatcher[T]{inner: inner, events: make(chan store.Event[T]), done: make(chan struct{})}
	go w.forward(l)
	return w, nil
}

// lagWatcher delivers its inner watch's events, in order, except while
// its store is held.
type lagWatcher[T any] struct {
	inner  store.Watcher[T]
	events chan store.Event[T]
	once   sync.Once
	done   chan struct{} // closed by Stop
}

func (w *lagWatcher[T]) forward(l *lagging[T]) {
	defer close(w.events)
	var held []store.Event[T]
	in := w.inner.Events()
	for in != nil || len(held) > 0 {
		stopped, changed := l.state()
		var out chan<- store.Event[T]
		var next store.Event[T]
		if !stopped && len(held) > 0 {
			out, next = w.events, held[0]
		}
		select {
		case ev, ok := <-in:
			if !ok {
				in = nil
				continue
			}
			held = append(held, ev)
		case out <- next:
			held = held[1:]
		case <-changed:
		case <-w.done:
			return
		}
	}
}

func (w *lagWatcher[T]) Events() <-chan store.Event[T] { return w.events }

func (w *lagWatcher[T]) Err() error { return w.inner.Err() }

func (w *lagWatcher[T]) Stop() {
	w.once.Do(func() { close(w.done) })
	w.inner.Stop()
}

// RequestProgress passes the request on: the answer comes with the
// events, held back with them.
func (w *lagWatcher[T]) RequestProgress(ctx context.Context) error {
	return w.inner.(store.ProgressRequester).RequestProgress(ctx)
}
