package store

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
)

// Watch delivers every change to keys starting with prefix made after
// revision after, in revision order, exactly once. after may be any retained
// revision (at or above the oldest one history still covers, see WithHistory)
// or a future one; an older one fails with ErrCompacted.
//
// Each watcher has its own goroutine that reads the shared history, so a
// write costs the writer one non-blocking notification per watcher and never
// waits for a reader. A watcher that falls more than WithWatchLag revisions
// behind (beyond its starting backlog) ends with ErrLagging; one whose next
// revision is removed by Compact ends with ErrCompacted. Cancelling ctx ends
// the watch with ctx's error, and Close with ErrUnavailable.
func (m *Memory[T]) Watch(ctx context.Context, prefix string, after int64) (Watcher[T], error) {
	if err := ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	if err := ValidateRevision(after); err != nil {
		return nil, err
	}
	if err := m.lockUsable(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	if oldest := m.hist.oldest(); after < oldest {
		return nil, fmt.Errorf("%w: watch after revision %d, history starts after %d", ErrCompacted, after, oldest)
	}
	w := &memoryWatcher[T]{
		m:        m,
		prefix:   prefix,
		events:   make(chan Event[T], defaultWatchBuffer),
		wake:     make(chan struct{}, 1),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		lagLimit: m.cfg.watchLag + max(0, m.rev-after),
	}
	w.cursor.Store(after)
	w.want.Store(noProgress)
	m.watchers[w] = struct{}{}
	go w.run(ctx)
	return w, nil
}

// memoryWatcher is one Watch of a Memory store. Its goroutine (run) copies
// events from the store's history to the events channel; writers only wake it
// and, if it has fallen behind, end it.
type memoryWatcher[T any] struct {
	m        *Memory[T]
	prefix   string
	events   chan Event[T]
	wake     chan struct{} // capacity 1: a pending "there is more"
	quit     chan struct{} // closed by end
	done     chan struct{} // closed when run has closed events and returned
	lagLimit int64

	// cursor is the last revision handed to events or skipped by the prefix
	// filter: the watcher still needs every revision after it.
	cursor atomic.Int64
	// want is the highest revision a progress request asked to be confirmed
	// and no Progress event has covered yet, or noProgress.
	want atomic.Int64

	mu    sync.Mutex
	ended bool
	err   error
}

// noProgress is memoryWatcher.want when no progress request is pending.
const noProgress = -1

var _ ProgressRequester = (*memoryWatcher[int])(nil)

func (w *memoryWatcher[T]) Events() <-chan Event[T] { return w.events }

// RequestProgress asks the watch to send a Progress event whose revision R
// is at least the store's revision now, once it has sent every event up to
// R under its prefix (see ProgressRequester). The store is in this process,
// so the answer follows as soon as those events are sent; R is the last
// revision the watch has scanned, which may be later than the store's
// revision at the request. Requests made before the answer are answered
// together. A watch after a future revision answers with that revision.
//
// It fails with ErrInvalid for a nil ctx, with ctx's error, and with
// ErrUnavailable once the watch or the store has ended.
func (w *memoryWatcher[T]) RequestProgress(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m := w.m
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.usable(); err != nil {
		return err
	}
	if !w.registered() {
		return fmt.Errorf("%w: progress request on a watch that has ended", ErrUnavailable)
	}
	for {
		cur := w.want.Load()
		if cur >= m.rev || w.want.CompareAndSwap(cur, m.rev) {
			break
		}
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return nil
}

// registered reports whether the watch is still running. m.mu is held.
func (w *memoryWatcher[T]) registered() bool {
	_, ok := w.m.watchers[w]
	if !ok {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.ended
}

func (w *memoryWatcher[T]) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Stop ends the watch (Err stays nil unless it had already ended for another
// reason) and returns once Events is closed.
func (w *memoryWatcher[T]) Stop() {
	w.end(nil)
	<-w.done
}

// end records why the watch ends, if it has not ended yet, and tells run to
// stop.
func (w *memoryWatcher[T]) end(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return
	}
	w.ended, w.err = true, err
	close(w.quit)
}

// written is called by a writer, with the store locked, after revision rev
// was committed; oldest is the oldest revision history can still resume
// after. It wakes the watcher, or ends it and returns false if it has fallen
// behind.
func (w *memoryWatcher[T]) written(rev, oldest int64) bool {
	cur := w.cursor.Load()
	if rev-cur > w.lagLimit || cur < oldest {
		w.end(fmt.Errorf("%w: watcher at revision %d, store at %d", ErrLagging, cur, rev))
		return false
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return true
}

// compacted is called by Compact, with the store locked; it ends the watcher
// and returns false if it still needs a revision at or below oldest.
func (w *memoryWatcher[T]) compacted(oldest int64) bool {
	if cur := w.cursor.Load(); cur < oldest {
		w.end(fmt.Errorf("%w: watcher at revision %d, history compacted to %d", ErrCompacted, cur, oldest))
		return false
	}
	return true
}

// run delivers events until the watch ends, then closes events and done.
func (w *memoryWatcher[T]) run(ctx context.Context) {
	defer close(w.done)
	defer close(w.events)
	defer w.unregister()
	batch := make([]Event[T], 0, defaultWatchBuffer)
	for {
		var more bool
		batch, more = w.fetch(batch[:0])
		for _, ev := range batch {
			if !w.send(ctx, ev) {
				return
			}
		}
		// Every event up to the cursor has been sent: a progress request
		// up to there can be answered, even while more is to come.
		if want := w.want.Load(); want != noProgress {
			if cur := w.cursor.Load(); cur >= want {
				// Clear the request before answering it: a request for
				// the same revision that comes before the clear is
				// answered by the event sent after it; one that comes
				// after, or one for a later revision (the clear then
				// fails), keeps want raised and is answered on the next
				// round. Clearing after the send lost a request for the
				// same revision made in between.
				w.want.CompareAndSwap(want, noProgress)
				if !w.send(ctx, Event[T]{Type: Progress, Object: Object[T]{Revision: cur}}) {
					return
				}
				continue
			}
		}
		if more {
			continue
		}
		select {
		case <-w.wake:
		case <-w.quit:
			return
		case <-ctx.Done():
			w.end(ctx.Err())
			return
		}
	}
}

// send delivers ev, or reports false once the watch ends.
func (w *memoryWatcher[T]) send(ctx context.Context, ev Event[T]) bool {
	select {
	case w.events <- ev:
		return true
	case <-w.quit:
		return false
	case <-ctx.Done():
		w.end(ctx.Err())
		return false
	}
}

// fetch appends to batch the matching events after the cursor, up to the
// batch's capacity, and advances the cursor past everything it scanned. more
// reports that revisions remain to scan.
func (w *memoryWatcher[T]) fetch(batch []Event[T]) (_ []Event[T], more bool) {
	m := w.m
	m.mu.RLock()
	defer m.mu.RUnlock()
	cur := w.cursor.Load()
	for cur < m.rev && len(batch) < cap(batch) {
		r, ok := m.hist.at(cur + 1)
		if !ok {
			// Writers and Compact end a watcher before dropping a revision
			// it needs; this is the same decision, taken by the watcher.
			w.end(fmt.Errorf("%w: watcher at revision %d, history starts after %d", ErrCompacted, cur, m.hist.oldest()))
			return batch, false
		}
		cur++
		if strings.HasPrefix(r.ev.Object.Key, w.prefix) {
			batch = append(batch, r.ev)
		}
	}
	w.cursor.Store(cur)
	return batch, cur < m.rev
}

func (w *memoryWatcher[T]) unregister() {
	w.m.mu.Lock()
	delete(w.m.watchers, w)
	w.m.mu.Unlock()
}
