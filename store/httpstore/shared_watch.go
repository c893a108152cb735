package httpstore

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/internal/watchend"
)

// maxHubBuffer bounds the recent events a hub keeps for watches that
// start behind its stream.
const maxHubBuffer = 10000

type rawEvent = store.Event[json.RawMessage]

// hub serves the watches of a Shared client's views from one stream of
// the whole store. Invariants, under mu: run is nil or the stream now;
// every event of a revision above run.after is in run.buf or still to
// come, so a watch after a revision at least run.after is served from
// buf and then live, in order, with nothing lost or repeated; a watch
// further behind gets a stream of its own.
type hub struct {
	raw *Client[json.RawMessage]
	mu  sync.Mutex
	run *hubRun
}

type hubRun struct {
	w      store.Watcher[json.RawMessage]
	cancel context.CancelFunc
	after  int64
	buf    []rawEvent
	subs   map[*sub]struct{}
}

func newHub(raw *Client[json.RawMessage]) *hub { return &hub{raw: raw} }

// sub is one view watch's feed: the raw events for it, queued.
type sub struct {
	prefix string
	after  int64
	run    *hubRun

	// need is the revision a progress request of this feed awaits (0:
	// none): a Progress of the stream at or above it answers it. Under
	// the hub's mu.
	need int64

	mu    sync.Mutex
	queue []rawEvent
	ended bool
	err   error
	wake  chan struct{} // cap 1
}

func (s *sub) push(ev rawEvent) {
	if ev.Type != store.Progress && (ev.Object.Revision <= s.after || !strings.HasPrefix(ev.Object.Key, s.prefix)) {
		return
	}
	s.mu.Lock()
	s.queue = append(s.queue, ev)
	s.mu.Unlock()
	s.poke()
}

func (s *sub) end(err error) {
	s.mu.Lock()
	s.ended, s.err = true, err
	s.mu.Unlock()
	s.poke()
}

func (s *sub) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// take returns the queued events, or that the feed ended and why.
func (s *sub) take() ([]rawEvent, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue
	s.queue = nil
	return q, s.ended && len(q) == 0, s.err
}

// subscribe returns a feed of the events under prefix after after, from
// the shared stream (started from after if none runs), or nil if the
// stream is past after and its buffer does not reach back to it.
func (h *hub) subscribe(prefix string, after int64) (*sub, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run == nil {
		ctx, cancel := context.WithCancel(context.Background())
		w, err := h.raw.Watch(ctx, "", after)
		if err != nil {
			cancel()
			return nil, err
		}
		h.run = &hubRun{w: w, cancel: cancel, after: after, subs: map[*sub]struct{}{}}
		go h.pump(h.run)
	}
	r := h.run
	if after < r.after {
		return nil, nil
	}
	s := &sub{prefix: prefix, after: after, run: r, wake: make(chan struct{}, 1)}
	for _, ev := range r.buf {
		s.push(ev)
	}
	r.subs[s] = struct{}{}
	return s, nil
}

// pump hands r's events to its feeds until its stream ends, then ends
// them with its error.
func (h *hub) pump(r *hubRun) {
	for ev := range r.w.Events() {
		h.mu.Lock()
		if ev.Type != store.Progress {
			r.buf = append(r.buf, ev)
			if len(r.buf) > maxHubBuffer {
				r.after = max(r.after, r.buf[0].Object.Revision)
				r.buf = r.buf[1:]
			}
		}
		for s := range r.subs {
			switch {
			case ev.Type != store.Progress:
				s.push(ev)
			case s.need > 0 && ev.Object.Revision >= s.need:
				s.need = 0
				s.push(ev)
			}
		}
		h.mu.Unlock()
	}
	err := r.w.Err()
	if err == nil {
		err = errors.New("httpstore: the shared watch ended")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range r.subs {
		s.end(err)
	}
	r.subs = nil
	if h.run == r {
		h.run = nil
	}
}

// unsubscribe drops s; the stream stops with its last feed (outside the
// lock, which pump needs to drain the stream while it stops).
func (h *hub) unsubscribe(s *sub) {
	h.mu.Lock()
	r := s.run
	delete(r.subs, s)
	last := len(r.subs) == 0 && h.run == r
	if last {
		h.run = nil
	}
	h.mu.Unlock()
	if last {
		r.cancel()
		r.w.Stop()
	}
}

// requestProgress asks s's stream for a progress report, for s: the
// stream's answers go to the feeds that asked, each once one covers the
// store's revision at its request (read first), so no feed gets an
// answer to another's request or to an older one of its own.
func (h *hub) requestProgress(ctx context.Context, s *sub) error {
	pr, ok := s.run.w.(store.ProgressRequester)
	if !ok {
		return errors.ErrUnsupported
	}
	rev, err := h.raw.Revision(ctx)
	if err != nil {
		return err
	}
	h.mu.Lock()
	s.need = max(s.need, rev, 1)
	h.mu.Unlock()
	return pr.RequestProgress(ctx)
}

// Watch delivers every change under prefix after revision after, as
// Client.Watch does, from the Shared client's one stream: a watch that
// starts behind the stream by more than it keeps gets a stream of its
// own. The watcher is a store.ProgressRequester.
func (v *View[T]) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[T], error) {
	if err := checkWatch(ctx, prefix, after); err != nil {
		return nil, err
	}
	s, err := v.s.hub.subscribe(prefix, after)
	if err != nil {
		return nil, err
	}
	var own store.Watcher[json.RawMessage]
	if s == nil {
		if own, err = v.s.raw.Watch(ctx, prefix, after); err != nil {
			return nil, err
		}
	}
	w := &viewWatcher[T]{v: v, s: s, own: own, events: make(chan store.Event[T], watchBuffer), end: watchend.New()}
	go w.run(ctx)
	return w, nil
}

// viewWatcher decodes a feed (or a stream of its own) into a view's
// events.
type viewWatcher[T any] struct {
	v      *View[T]
	s      *sub
	own    store.Watcher[json.RawMessage]
	events chan store.Event[T]
	end    watchend.End
}

var _ store.ProgressRequester = (*viewWatcher[int])(nil)

func (w *viewWatcher[T]) Events() <-chan store.Event[T] { return w.events }

// Err returns why the watch ended, once Events is closed.
func (w *viewWatcher[T]) Err() error { return w.end.Result() }

func (w *viewWatcher[T]) Stop() {
	w.end.RequestStop()
	<-w.end.Done
}

func (w *viewWatcher[T]) RequestProgress(ctx context.Context) error {
	if w.own != nil {
		if pr, ok := w.own.(store.ProgressRequester); ok {
			return pr.RequestProgress(ctx)
		}
		return errors.ErrUnsupported
	}
	return w.v.s.hub.requestProgress(ctx, w.s)
}

// run delivers decoded events until the feed ends, ctx ends or Stop.
func (w *viewWatcher[T]) run(ctx context.Context) {
	defer close(w.end.Done)
	defer close(w.events)
	if w.own != nil {
		defer w.own.Stop()
		w.end.Err = w.relay(ctx, w.own.Events(), w.own.Err)
		return
	}
	defer w.v.s.hub.unsubscribe(w.s)
	for {
		evs, ended, err := w.s.take()
		if ended {
			w.end.Err = err
			return
		}
		for _, ev := range evs {
			if w.end.Err = w.send(ctx, ev); w.end.Err != nil || w.stopped() {
				return
			}
		}
		select {
		case <-w.s.wake:
		case <-ctx.Done():
			w.end.Err = ctx.Err()
			return
		case <-w.end.Stop:
			return
		}
	}
}

// relay delivers a stream of the watch's own.
func (w *viewWatcher[T]) relay(ctx context.Context, evs <-chan rawEvent, errOf func() error) error {
	for {
		select {
		case ev, ok := <-evs:
			if !ok {
				return errOf()
			}
			if err := w.send(ctx, ev); err != nil || w.stopped() {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		case <-w.end.Stop:
			return nil
		}
	}
}

func (w *viewWatcher[T]) stopped() bool {
	select {
	case <-w.end.Stop:
		return true
	default:
		return false
	}
}

// send decodes ev and delivers it; a value that does not decode ends the
// watch with its error.
func (w *viewWatcher[T]) send(ctx context.Context, ev rawEvent) error {
	out := store.Event[T]{Type: ev.Type, Cause: ev.Cause, Object: store.Object[T]{Key: ev.Object.Key, Revision: ev.Object.Revision, CreateRevision: ev.Object.CreateRevision}}
	if ev.Type != store.Progress && ev.Object.Value != nil {
		obj, err := w.v.decode(ev.Object)
		if err != nil {
			return err
		}
		out.Object = obj
	}
	select {
	case w.events <- out:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-w.end.Stop:
		return nil
	}
}
