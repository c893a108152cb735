package boltstore

import (
	"fmt"
	"strings"
	"sync"

	"github.com/converge-go/converge/store"
)

// hub fans committed events out to the feeds of running watches, in revision
// order. Commit handlers of different transactions may run in any order, so
// the hub holds back an event until every earlier revision has arrived; since
// each committed revision arrives exactly once, each is published exactly
// once. Publishing never blocks: a feed that is full is ended with
// store.ErrLagging.
type hub struct {
	mu sync.Mutex
	// next is the next revision to publish: every revision before it has
	// been handed to the feeds.
	next    int64
	pending map[int64]rawEvent
	feeds   map[*feed]struct{}
	closed  bool
	causes  causeTable
}

func newHub(rev int64, history int) *hub {
	return &hub{next: rev + 1, pending: make(map[int64]rawEvent), feeds: make(map[*feed]struct{}), causes: newCauseTable(history)}
}

// causeOf returns the cause of revision rev, if the hub keeps it.
func (h *hub) causeOf(rev int64) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.causes.of(rev)
}

// committed takes the event of a committed transaction.
func (h *hub) committed(ev rawEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.causes.add(ev.rev, ev.cause)
	if ev.rev != h.next {
		h.pending[ev.rev] = ev
		return
	}
	for {
		h.publish(ev)
		h.next++
		var ok bool
		if ev, ok = h.pending[h.next]; !ok {
			return
		}
		delete(h.pending, h.next)
	}
}

// publish hands ev to the feeds that want it, then answers the progress
// requests that wait for its revision.
func (h *hub) publish(ev rawEvent) {
	for f := range h.feeds {
		if ev.rev > f.after && strings.HasPrefix(ev.key, f.prefix) && !f.push(ev) {
			delete(h.feeds, f)
			continue
		}
		if f.want != 0 && ev.rev >= f.want {
			f.want = 0
			f.pushProgress(ev.rev)
		}
	}
}

// requestProgress queues a progress marker on f, behind every event up to
// rev: at once if rev has been published, else when it is. A marker carries
// the last revision published when it is queued, at least rev. Requests
// waiting together are answered by one marker, at the latest revision any
// of them waits for.
func (h *hub) requestProgress(f *feed, rev int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.feeds[f]; !ok {
		return errWatchEnded
	}
	if published := h.next - 1; published >= rev {
		f.pushProgress(published)
		return nil
	}
	f.want = max(f.want, rev)
	return nil
}

var errWatchEnded = fmt.Errorf("%w: the watch has ended", store.ErrUnavailable)

// subscribe adds f and returns the last revision published before it: f
// receives every later event it matches.
func (h *hub) subscribe(f *feed) (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return 0, errClosed
	}
	h.feeds[f] = struct{}{}
	return h.next - 1, nil
}

func (h *hub) unsubscribe(f *feed) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.feeds, f)
}

// close ends every feed with store.ErrUnavailable and refuses new ones.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for f := range h.feeds {
		f.end(errClosed)
		delete(h.feeds, f)
	}
}

// feed is the queue of live events of one watch, filled by the hub and
// drained by the watch's goroutine.
type feed struct {
	prefix string
	after  int64 // events at or before this revision are not wanted
	limit  int
	// want is the revision a pending progress request waits for (0: none);
	// guarded by the hub's mutex.
	want int64

	mu     sync.Mutex
	queue  []rawEvent
	wake   chan struct{} // capacity 1: events are queued
	ended  chan struct{} // closed when the hub ends the feed
	endErr error
}

func newFeed(prefix string, after int64, limit int) *feed {
	return &feed{prefix: prefix, after: after, limit: limit, wake: make(chan struct{}, 1), ended: make(chan struct{})}
}

// push queues ev, or ends the feed with store.ErrLagging and reports false
// if limit events are already waiting.
func (f *feed) push(ev rawEvent) bool {
	f.mu.Lock()
	if len(f.queue) >= f.limit {
		f.mu.Unlock()
		f.end(fmt.Errorf("%w: %d events waiting at revision %d", store.ErrLagging, f.limit, ev.rev))
		return false
	}
	f.queue = append(f.queue, ev)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
	return true
}

// pushProgress queues a progress marker at rev, or moves the marker last in
// the queue up to rev: nothing follows it, so it answers for both.
func (f *feed) pushProgress(rev int64) {
	f.mu.Lock()
	if n := len(f.queue); n > 0 && f.queue[n-1].typ == store.Progress {
		f.queue[n-1].rev = rev
	} else {
		f.queue = append(f.queue, rawEvent{typ: store.Progress, rev: rev})
	}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// pop takes the oldest queued event.
func (f *feed) pop() (rawEvent, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queue) == 0 {
		return rawEvent{}, false
	}
	ev := f.queue[0]
	f.queue[0] = rawEvent{}
	f.queue = f.queue[1:]
	return ev, true
}

// end records why the feed ended and signals its goroutine. The hub ends a
// feed at most once: it removes the feed as it ends it.
func (f *feed) end(err error) {
	f.mu.Lock()
	f.endErr = err
	f.queue = nil
	f.mu.Unlock()
	close(f.ended)
}

func (f *feed) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.endErr
}
