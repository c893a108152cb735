package checkpointtest

import (
	"context"
	"sync"

	"github.com/converge-go/converge/store"
)

// resumingWatcher is a watch of a Switch with SetResume: it follows
// whichever store is served, resuming after the last revision it
// delivered, and is silent while none is.
type resumingWatcher[T any] struct {
	sw     *Switch[T]
	prefix string
	ctx    context.Context
	cancel context.CancelFunc
	events chan store.Event[T]
	done   chan struct{}

	mu      sync.Mutex
	inner   store.Watcher[T] // the watch of the served store; nil while none
	pending bool             // a progress request waits for a served store
	last    int64
	err     error
}

var _ store.ProgressRequester = (*resumingWatcher[int])(nil)

// resumingWatch begins a resuming watch of s, served until stopped.
func (w *Switch[T]) resumingWatch(ctx context.Context, s store.Store[T], stopped <-chan struct{}, prefix string, after int64) (store.Watcher[T], error) {
	wctx, cancel := context.WithCancel(ctx)
	inner, err := s.Watch(wctx, prefix, after)
	if err != nil {
		cancel()
		return nil, err
	}
	rw := &resumingWatcher[T]{sw: w, prefix: prefix, ctx: wctx, cancel: cancel, last: after,
		events: make(chan store.Event[T]), done: make(chan struct{}), inner: inner}
	go rw.run(inner, stopped)
	return rw, nil
}

// run follows the served stores, from inner, until the watch is stopped
// or a served store's watch ends of itself.
func (w *resumingWatcher[T]) run(inner store.Watcher[T], stopped <-chan struct{}) {
	defer close(w.done)
	defer close(w.events)
	for {
		ended := w.forward(inner, stopped)
		inner.Stop()
		w.mu.Lock()
		w.inner = nil
		if ended {
			w.err = inner.Err()
		}
		w.mu.Unlock()
		if ended {
			return
		}
		if inner, stopped = w.next(); inner == nil {
			return
		}
	}
}

// next waits for a store to be served and watches it after the last
// revision delivered, asking it for the progress requested meanwhile; nil
// once the watch is stopped or the served store's watch fails (compacted,
// say).
func (w *resumingWatcher[T]) next() (store.Watcher[T], <-chan struct{}) {
	for w.ctx.Err() == nil {
		next := w.sw.nextServe()
		s, _, stopped, err := w.sw.serving()
		if err != nil {
			select { // silent until a store is served again
			case <-next:
			case <-w.ctx.Done():
			}
			continue
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		inner, err := s.Watch(w.ctx, w.prefix, w.last)
		if err != nil {
			w.err = err
			return nil, nil
		}
		w.inner = inner
		if pr, ok := inner.(store.ProgressRequester); ok && w.pending {
			w.pending = false
			_ = pr.RequestProgress(w.ctx)
		}
		return inner, stopped
	}
	return nil, nil
}

// forward passes inner's events on until the switch stops serving its
// store (false) or inner ends of itself (true).
func (w *resumingWatcher[T]) forward(inner store.Watcher[T], stopped <-chan struct{}) (ended bool) {
	for {
		select {
		case ev, ok := <-inner.Events():
			if !ok {
				return true
			}
			select {
			case w.events <- ev:
			case <-stopped:
				return false
			case <-w.ctx.Done():
				return true
			}
			w.mu.Lock()
			w.last = max(w.last, ev.Object.Revision)
			w.mu.Unlock()
		case <-stopped:
			return false
		case <-w.ctx.Done():
			return true
		}
	}
}

func (w *resumingWatcher[T]) Events() <-chan store.Event[T] { return w.events }

func (w *resumingWatcher[T]) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *resumingWatcher[T]) Stop() {
	w.cancel()
	<-w.done
}

// RequestProgress asks the served store's watch for progress; while none
// is served the request waits for the next, as a request to a stopped
// member is retried until it is back.
func (w *resumingWatcher[T]) RequestProgress(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if pr, ok := w.inner.(store.ProgressRequester); ok {
		return pr.RequestProgress(ctx)
	}
	w.pending = true
	return nil
}
