package store

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/converge-go/converge/internal/nilness"
	"github.com/converge-go/converge/store/internal/watchend"
)

// WatchCatchingUp is Watch for a consumer that needs each key's latest
// state rather than every change (a cache, a controller): over a store
// that implements Differ, a watch that falls behind is not ended. When
// the store's watch ends with ErrLagging, or cannot start or go on
// because the history no longer holds its next revision (ErrCompacted),
// the watcher resumes after the last revision it delivered while the
// history still holds the next one, and once it does not, catches up by
// difference: it delivers Diff's events from that revision (each key
// changed since, once, with its state now, in revision order), then
// watches on from the revision of that Diff. So falling behind costs the
// keys changed meanwhile, never a re-list. Over the memory store the
// Diff is read a page of events at a time, into one slice the watcher
// keeps, and its last page reads the rest whole, so the catch-up still
// ends at a revision whose every change it has delivered.
//
// What it guarantees: events in revision order; after a catch-up every
// key has been delivered at its state at the catch-up's revision, but a
// key changed several times meanwhile is delivered once, and one created
// and deleted meanwhile may be delivered as Deleted or not at all.
// Progress requests pass through (store.ProgressRequester) and are
// answered after a catch-up's events; the watcher implements
// ProgressRequester only if the store's first watch does (or could not
// start: the history no longer held its revision). The watch ends, as Watch's does, with Stop (nil), the
// context's error, ErrUnavailable, a value that does not decode, or
// ErrCompacted when even Diff cannot tell what changed (deletes older
// than the store remembers).
//
// Diff reports each revision's one key, so the stores that implement it
// give each write its own revision. Over a store without Differ,
// WatchCatchingUp is Watch. A nil ctx or store, a bad prefix or a negative
// revision are refused with ErrInvalid.
func WatchCatchingUp[T any](ctx context.Context, s Store[T], prefix string, after int64) (Watcher[T], error) {
	switch {
	case ctx == nil:
		return nil, fmt.Errorf("%w: nil context", ErrInvalid)
	case nilness.Is(s):
		return nil, fmt.Errorf("%w: nil store", ErrInvalid)
	}
	d, ok := s.(Differ[T])
	if !ok {
		return s.Watch(ctx, prefix, after)
	}
	cw := &catchUpWatcher[T]{s: s, d: d, prefix: prefix, events: make(chan Event[T]), end: watchend.New()}
	inner, err := s.Watch(ctx, prefix, after)
	switch {
	case errors.Is(err, ErrCompacted):
		cw.diffFrom = true // catch up from after before the first watch
	case err != nil:
		return nil, err
	}
	cw.inner = inner
	go cw.run(ctx, after)
	if _, ok := inner.(ProgressRequester); inner != nil && !ok {
		// The store's watches cannot answer progress requests: neither
		// does this one (a consumer would otherwise ask in vain).
		return struct{ Watcher[T] }{cw}, nil
	}
	return cw, nil
}

// catchUpWatcher follows the store's watch and catches up by difference
// whenever that watch falls behind.
type catchUpWatcher[T any] struct {
	s        Store[T]
	d        Differ[T]
	prefix   string
	events   chan Event[T]
	end      watchend.End
	diffFrom bool // the first watch failed: start with a Diff
	// pageBuf is the room of a page of a catch-up's events (diffPager),
	// reused by every page; only follow's goroutine uses it.
	pageBuf []Event[T]

	mu    sync.Mutex
	inner Watcher[T] // the store's watch now, nil while catching up
	asked bool       // a progress request is unanswered
}

var _ ProgressRequester = (*catchUpWatcher[int])(nil)

func (w *catchUpWatcher[T]) Events() <-chan Event[T] { return w.events }

// Err says why the watch ended; it is nil while it runs.
func (w *catchUpWatcher[T]) Err() error { return w.end.Result() }

// Stop ends the watch; it is safe to call more than once, concurrently.
func (w *catchUpWatcher[T]) Stop() {
	w.end.RequestStop()
	<-w.end.Done
}

// RequestProgress asks the store's watch for a Progress event (see
// ProgressRequester); while the watcher catches up, the request waits for
// the next watch, after the catch-up's events. It fails with ErrInvalid
// for a nil ctx, with ctx's error, and with ErrUnavailable once the watch
// has ended or if the store's watch cannot report progress.
func (w *catchUpWatcher[T]) RequestProgress(ctx context.Context) error {
	if err := checkProgressRequest(ctx, &w.end); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.asked = true
	if w.inner == nil {
		return nil
	}
	pr, ok := w.inner.(ProgressRequester)
	if !ok {
		return fmt.Errorf("%w: the store's watch does not report progress", ErrUnavailable)
	}
	if err := pr.RequestProgress(ctx); err != nil && ctx.Err() != nil {
		return err
	}
	// A store's watch that has just ended refuses the request: it stays
	// asked, for the next watch, or the watch ends and says why.
	return nil
}

func (w *catchUpWatcher[T]) run(ctx context.Context, after int64) {
	defer close(w.events)
	w.end.Err = w.follow(ctx, after)
	w.setInner(nil)
	close(w.end.Done)
}

// follow forwards the store's watch until it ends for a reason other
// than falling behind. A watch that lagged resumes after the last
// revision sent while the history still holds the next one (as cheap as
// it gets); once it does not, the watcher catches up by difference.
func (w *catchUpWatcher[T]) follow(ctx context.Context, last int64) error {
	behind := w.diffFrom
	for {
		select {
		case <-w.end.Stop: // a catch-up stopped half-way must not start a watch, nor another catch-up
			return nil
		default:
		}
		if behind {
			rev, err := w.diff(ctx, last)
			if err != nil {
				return err
			}
			last = max(last, rev)
		}
		if w.inner == nil {
			inner, err := w.s.Watch(ctx, w.prefix, last)
			if errors.Is(err, ErrCompacted) {
				behind = true
				continue
			}
			if err != nil {
				return err
			}
			w.setInner(inner)
		}
		var err error
		last, err = w.forward(ctx, last)
		w.setInner(nil)
		switch {
		case errors.Is(err, ErrLagging):
			behind = false // resume from the history if it still can
		case errors.Is(err, ErrCompacted):
			behind = true
		default:
			return err
		}
	}
}

// setInner makes inner the watch progress requests go to, stopping the
// one before, and passes on a request that is still unanswered.
func (w *catchUpWatcher[T]) setInner(inner Watcher[T]) {
	w.mu.Lock()
	old := w.inner
	w.inner = inner
	if pr, ok := inner.(ProgressRequester); ok && w.asked {
		_ = pr.RequestProgress(context.Background()) // an error ends inner, and follow sees it
	}
	w.mu.Unlock()
	if old != nil {
		old.Stop()
	}
}

// forward sends the store's watch's events until it ends, and returns the
// revision of the last change sent and why it ended.
func (w *catchUpWatcher[T]) forward(ctx context.Context, last int64) (int64, error) {
	w.mu.Lock()
	inner := w.inner
	w.mu.Unlock()
	for {
		var ev Event[T]
		var ok bool
		select {
		case ev, ok = <-inner.Events():
		case <-w.end.Stop:
			return last, nil
		}
		if !ok {
			break
		}
		if !w.send(ctx, ev) {
			return last, w.ended(ctx)
		}
		if ev.Type != Progress {
			last = ev.Object.Revision
		}
	}
	if err := inner.Err(); err != nil {
		return last, err
	}
	return last, fmt.Errorf("%w: the store's watch ended without an error", ErrUnavailable)
}

// diff sends the events of a Diff after last and returns its revision.
// Over a store that pages its Diff (diffPager) it reads a page at a time
// into one slice it keeps until it has passed the store's revision at its
// first page, then the rest in one whole page: a catch-up from a burst
// holds a page of events, not one for every key changed, and still ends
// at a revision whose every change it has delivered.
func (w *catchUpWatcher[T]) diff(ctx context.Context, last int64) (int64, error) {
	p, ok := w.d.(diffPager[T])
	if !ok {
		changes, rev, err := w.d.Diff(ctx, w.prefix, last)
		if err != nil {
			return 0, err
		}
		if !w.sendAll(ctx, changes) {
			return 0, w.ended(ctx)
		}
		return rev, nil
	}
	since, target := last, int64(-1)
	for {
		whole := target >= 0 && last >= target
		page, upto, now, err := p.diffPage(ctx, w.prefix, since, last, whole, w.pageBuf)
		if err != nil {
			return 0, err
		}
		sent := w.sendAll(ctx, page)
		w.keepPage(page)
		switch {
		case !sent:
			return 0, w.ended(ctx)
		case upto == now:
			return upto, nil
		case target < 0:
			target = now
		}
		last = upto
	}
}

// keepPage keeps the room of a page for the next, without its objects,
// unless it is a whole page more than twice a page's size: that room goes
// back to the heap.
func (w *catchUpWatcher[T]) keepPage(page []Event[T]) {
	if cap(page) > 2*diffPageSize {
		w.pageBuf = nil
		return
	}
	clear(page)
	w.pageBuf = page[:0]
}

// sendAll delivers events in turn, or reports false once the watch is
// stopped or its context ends (send).
func (w *catchUpWatcher[T]) sendAll(ctx context.Context, events []Event[T]) bool {
	for _, ev := range events {
		if !w.send(ctx, ev) {
			return false
		}
	}
	return true
}

// send delivers ev, or reports false once the watch is stopped or its
// context ends.
func (w *catchUpWatcher[T]) send(ctx context.Context, ev Event[T]) bool {
	select {
	case w.events <- ev:
		if ev.Type == Progress {
			w.mu.Lock()
			w.asked = false
			w.mu.Unlock()
		}
		return true
	case <-w.end.Stop:
		return false
	case <-ctx.Done():
		return false
	}
}

// ended is the error of a watch whose send failed: nil after Stop, else
// the context's.
func (w *catchUpWatcher[T]) ended(ctx context.Context) error {
	select {
	case <-w.end.Stop:
		return nil
	default:
		return ctx.Err()
	}
}
