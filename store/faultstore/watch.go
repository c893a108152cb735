package faultstore

import (
	"context"
	"fmt"
	"sync"

	"github.com/converge-go/converge/store"
)

// Watch watches through the faults. The watch may be refused (Fail,
// Compacted, an outage); once open it ends with store.ErrUnavailable after
// Decision.BreakAfter events (Break), on BreakWatches and when a Loud
// outage starts, and is held back (open, silent, deaf to progress
// requests) while a silent one lasts. The watcher implements
// store.ProgressRequester when the wrapped one does, and passes each
// request through while the store is up.
func (s *Store[T]) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[T], error) {
	ctx, d, err := s.enter(ctx, Call{Op: OpWatch, Key: prefix})
	if err != nil {
		return nil, err
	}
	inner, err := s.inner.Watch(ctx, prefix, after)
	if err != nil {
		return nil, err
	}
	limit := -1
	if d.Fault == Break {
		limit = max(d.BreakAfter, 0)
	}
	w := &watcher[T]{
		store: s, inner: inner, ctx: ctx, limit: limit,
		events: make(chan store.Event[T]), requests: make(chan struct{}, 1),
		broken: make(chan struct{}), stopped: make(chan struct{}), done: make(chan struct{}),
	}
	s.mu.Lock()
	s.watchers[w] = struct{}{}
	loud := s.outage == Loud // an outage that began while the watch was opened
	s.mu.Unlock()
	if loud {
		w.breakOff()
	}
	go w.forward(func() {
		s.mu.Lock()
		delete(s.watchers, w)
		s.mu.Unlock()
	})
	if _, ok := inner.(store.ProgressRequester); ok {
		return &progressWatcher[T]{w}, nil
	}
	return w, nil
}

type watcher[T any] struct {
	store    *Store[T]
	inner    store.Watcher[T]
	ctx      context.Context // the Watch call's
	limit    int             // events before breaking; -1 for never
	events   chan store.Event[T]
	requests chan struct{} // progress requests made during a silent outage
	broken   chan struct{} // closed to inject a break
	once     sync.Once
	stopped  chan struct{} // closed by Stop: the watch ends with nil
	stopOnce sync.Once
	done     chan struct{}
	err      error
}

// forward moves the inner watch's events to Events. It reads the inner
// watch at once, whatever the outage, and holds what it read back while a
// silent outage lasts, as an etcd member holds the changes it cannot send.
func (w *watcher[T]) forward(unregister func()) {
	defer close(w.done)
	defer close(w.events)
	defer unregister()
	defer w.inner.Stop()
	brokenErr := fmt.Errorf("%w: faultstore: injected watch break", store.ErrUnavailable)
	var held []store.Event[T] // read from the inner watch, not yet delivered
	in := w.inner.Events()    // nil once the inner watch has ended
	var innerErr error
	asked := false // a progress request was swallowed by a silent outage
	for {
		if w.limit == 0 {
			w.err = brokenErr
			return
		}
		outage, changed := w.store.state()
		silent := outage.silent()
		if !silent && asked {
			asked = false
			// The request was accepted when it was made; if passing it on
			// fails the watch is ending, which tells the caller more.
			_ = w.inner.(store.ProgressRequester).RequestProgress(w.ctx)
		}
		if !silent && in == nil && len(held) == 0 {
			w.err = innerErr
			return
		}
		var out chan<- store.Event[T]
		var next store.Event[T]
		if !silent && len(held) > 0 {
			out, next = w.events, held[0]
		}
		select {
		case ev, ok := <-in:
			if !ok {
				in, innerErr = nil, w.inner.Err()
				continue
			}
			held = append(held, ev)
		case out <- next:
			held[0] = store.Event[T]{}
			held = held[1:]
			if w.limit > 0 && next.Type != store.Progress {
				w.limit--
			}
		case <-changed:
		case <-w.requests:
			asked = true
		case <-w.ctx.Done():
			w.err = w.ctx.Err()
			return
		case <-w.broken:
			w.err = brokenErr
			return
		case <-w.stopped:
			return
		}
	}
}

func (w *watcher[T]) breakOff() { w.once.Do(func() { close(w.broken) }) }

// Events delivers the wrapped watch's events until the watch ends.
func (w *watcher[T]) Events() <-chan store.Event[T] { return w.events }

// Err says why the watch ended; valid once Events is closed.
func (w *watcher[T]) Err() error {
	<-w.done
	return w.err
}

// Stop ends the watch, with a nil Err.
func (w *watcher[T]) Stop() {
	w.stopOnce.Do(func() { close(w.stopped) })
	<-w.done
}

// progressWatcher is a watcher over a store.ProgressRequester.
type progressWatcher[T any] struct {
	*watcher[T]
}

var _ store.ProgressRequester = (*progressWatcher[int])(nil)

// RequestProgress passes the request to the wrapped watch while the store
// is up. During a silent outage it accepts the request and answers nothing
// until the outage ends (requests made meanwhile coalesce into one);
// during a Loud outage, or once the watch has ended, it fails with
// store.ErrUnavailable.
func (w *progressWatcher[T]) RequestProgress(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: faultstore: nil context", store.ErrInvalid)
	}
	select {
	case <-w.done:
		return fmt.Errorf("%w: faultstore: the watch has ended", store.ErrUnavailable)
	default:
	}
	outage, _ := w.store.state()
	switch {
	case outage == Loud:
		return fmt.Errorf("%w: faultstore: injected Loud outage", store.ErrUnavailable)
	case outage.silent():
		select {
		case w.requests <- struct{}{}:
		default: // one is already waiting: the answer will cover both
		}
		return nil
	}
	return w.inner.(store.ProgressRequester).RequestProgress(ctx)
}
