package httpstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/converge-go/converge/internal/traceparent"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/converge-go/converge/store"
)

// Watch delivers every change under prefix after revision after, in
// revision order, exactly once, from a stream the server keeps open.
//
// The stream carries a heartbeat (see WithHeartbeat); a stream silent for
// the watch timeout (WithWatchTimeout, by default two heartbeats) is judged
// dead. A dead or broken stream is reopened transparently after the last
// revision delivered, so that no event is lost or repeated (events of a
// revision cut in two are told apart by key); if no stream can be opened
// within another watch timeout, the watch ends with store.ErrUnavailable.
// So a watch whose server stays silent or unreachable ends within two
// watch timeouts of the last thing it heard. A store error (ErrCompacted
// when the server's history no longer covers the resume point, ErrLagging,
// ErrInvalid) ends the watch with that error; so do ErrUnauthorized and
// ErrForbidden. Cancelling ctx ends it with ctx's error, Stop with none.
//
// The watcher is a store.ProgressRequester; see RequestProgress.
func (c *Client[T]) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[T], error) {
	if err := checkWatch(ctx, prefix, after); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &watcher[T]{
		c:        c,
		prefix:   prefix,
		parent:   ctx,
		ctx:      wctx,
		cancel:   cancel,
		events:   make(chan store.Event[T], watchBuffer),
		done:     make(chan struct{}),
		kick:     make(chan struct{}, 1),
		complete: after,
	}
	s, err := w.open(c.openTimeout())
	if err != nil {
		cancel()
		return nil, err
	}
	go w.requestLoop()
	go w.run(s)
	return w, nil
}

// watchBuffer is the capacity of a watcher's Events channel.
const watchBuffer = 64

func (c *Client[T]) openTimeout() time.Duration {
	if c.watchTimeout > 0 {
		return c.watchTimeout
	}
	return DefaultWatchTimeout
}

// watcher is one Watch of a Client. Its run goroutine reads streams and
// delivers their events; its requestLoop goroutine sends progress requests.
type watcher[T any] struct {
	c      *Client[T]
	prefix string
	parent context.Context // the caller's
	ctx    context.Context // ends with the watch
	cancel context.CancelFunc
	events chan store.Event[T]
	done   chan struct{} // closed when run has closed events
	kick   chan struct{} // capacity 1: a progress request to send

	// Resume state, owned by run (and by Watch before run starts): every
	// change up to complete has been delivered, and so have the changes at
	// revision cur to the keys in curKeys (cur > complete, or 0).
	complete int64
	cur      int64
	curKeys  map[string]struct{}
	// Reconnection state, owned by run: when the last working stream
	// broke (zero while one works), and the wait before the next attempt.
	brokenSince time.Time
	delay       time.Duration

	mu       sync.Mutex
	streamID string
	stopped  bool
	failed   error // why requestLoop ended the watch
	err      error
	// Progress requests: reqSeq numbers the latest, doneSeq the latest
	// answered; knownSeq is the latest whose revision the server has
	// told (the highest such revision is reqRev).
	reqSeq, doneSeq, knownSeq, reqRev int64
}

var _ store.ProgressRequester = (*watcher[int])(nil)

func (w *watcher[T]) Events() <-chan store.Event[T] { return w.events }

// Err says why the watch ended; it is valid once Events is closed.
func (w *watcher[T]) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Stop ends the watch and waits for its goroutines to finish. It is safe
// to call more than once and after the watch has ended.
func (w *watcher[T]) Stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.cancel()
	<-w.done
}

// finish closes Events with the reason the watch ended.
func (w *watcher[T]) finish(err error) {
	w.cancel()
	w.mu.Lock()
	switch {
	case w.stopped:
		err = nil
	case w.failed != nil:
		err = w.failed
	case w.parent.Err() != nil:
		err = w.parent.Err()
	}
	w.err = err
	w.mu.Unlock()
	close(w.events)
	close(w.done)
}

// conn is one open stream.
type conn struct {
	body    io.ReadCloser
	dec     *json.Decoder
	cancel  context.CancelFunc
	timer   *time.Timer // cancels the stream when it stays silent
	silence time.Duration
}

func (s *conn) close() {
	s.timer.Stop()
	s.cancel()
	_ = s.body.Close()
}

// open opens a stream after the last revision delivered and reads its
// start frame, all within timeout.
func (w *watcher[T]) open(timeout time.Duration) (*conn, error) {
	sctx, cancel := context.WithCancel(w.ctx)
	timer := time.AfterFunc(timeout, cancel)
	fail := func(err error) (*conn, error) {
		timer.Stop()
		cancel()
		if cerr := w.ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	q := url.Values{paramPrefix: {w.prefix}, paramAfter: {strconv.FormatInt(w.resumeAfter(), 10)}}
	req, err := w.c.newRequest(sctx, http.MethodGet, pathWatch, q, nil)
	if err != nil {
		return fail(err)
	}
	resp, err := w.c.hc.Do(req)
	if err != nil {
		return fail(fmt.Errorf("httpstore: watch: %w: %v", store.ErrUnavailable, err))
	}
	if resp.StatusCode != http.StatusOK {
		data, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		_ = resp.Body.Close()
		if rerr != nil {
			return fail(fmt.Errorf("httpstore: watch: %w: %v", store.ErrUnavailable, rerr))
		}
		return fail(responseError(resp, data))
	}
	s := &conn{body: resp.Body, dec: json.NewDecoder(resp.Body), cancel: cancel, timer: timer}
	var f frame
	if err := s.dec.Decode(&f); err != nil || f.Type != frameStart || f.HeartbeatMillis <= 0 {
		_ = resp.Body.Close()
		if err == nil {
			err = fmt.Errorf("the first frame is of type %q, heartbeat %d ms", f.Type, f.HeartbeatMillis)
		}
		return fail(withContext(protocolErrorf("no start frame: %w", err), "watch"))
	}
	s.silence = w.c.watchTimeout
	if s.silence == 0 {
		s.silence = 2 * time.Duration(f.HeartbeatMillis) * time.Millisecond
	}
	timer.Reset(s.silence)
	w.mu.Lock()
	w.streamID = f.Watch
	w.mu.Unlock()
	return s, nil
}

// resumeAfter is the revision a new stream starts after: every revision
// before the last one delivered is complete (the stream is in revision
// order), so a cut inside revision cur replays only that revision.
func (w *watcher[T]) resumeAfter() int64 {
	if w.cur > 0 {
		return max(w.complete, w.cur-1)
	}
	return w.complete
}

// run reads streams until the watch ends, reopening broken ones.
func (w *watcher[T]) run(s *conn) {
	for {
		err := w.read(s)
		s.close()
		if !errors.Is(err, store.ErrUnavailable) || w.ctx.Err() != nil {
			w.finish(err)
			return
		}
		if w.brokenSince.IsZero() {
			w.brokenSince, w.delay = time.Now(), 0
		}
		if s, err = w.reopen(s.silence, err); err != nil {
			w.finish(err)
			return
		}
	}
}

// reopen retries opening a stream until timeout after the watch last
// heard from a working one (brokenSince): streams that open and break at
// once do not extend it. Retries back off from 10 ms to 1 s.
func (w *watcher[T]) reopen(timeout time.Duration, cause error) (*conn, error) {
	deadline := w.brokenSince.Add(timeout)
	for {
		if w.delay > 0 {
			t := time.NewTimer(max(0, min(w.delay, time.Until(deadline))))
			select {
			case <-w.ctx.Done():
				t.Stop()
				return nil, w.ctx.Err()
			case <-t.C:
			}
		}
		w.delay = min(max(2*w.delay, 10*time.Millisecond), time.Second)
		left := time.Until(deadline)
		if left <= 0 {
			return nil, withContext(cause, fmt.Sprintf("watch: no working stream within %v", timeout))
		}
		s, err := w.open(left)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, store.ErrUnavailable) || w.ctx.Err() != nil {
			return nil, err
		}
		cause = err
	}
}

// read delivers the frames of one stream until it ends, and returns why.
// An error matching store.ErrUnavailable means the stream broke and the
// watch may go on on a new one.
func (w *watcher[T]) read(s *conn) error {
	for {
		var f frame
		if err := s.dec.Decode(&f); err != nil {
			if cerr := w.ctx.Err(); cerr != nil {
				return cerr
			}
			return fmt.Errorf("httpstore: watch: %w: stream broken or silent for %v: %v", store.ErrUnavailable, s.silence, err)
		}
		s.timer.Reset(s.silence)
		var err error
		switch f.Type {
		case frameCreated, frameUpdated, frameDeleted:
			err = w.event(s, f)
		case frameProgress:
			err = w.progress(s, f)
		case frameEnd:
			if f.Error == nil {
				return fmt.Errorf("httpstore: watch: %w: the server ended the stream", store.ErrUnavailable)
			}
			return f.Error.decode()
		case frameStart:
			return withContext(protocolErrorf("a second start frame"), "watch")
		}
		if err != nil {
			return err
		}
		// The stream works: a frame was read and taken. A bad frame does
		// not count, so a server that sends only bad ones ends the watch
		// within a watch timeout instead of being retried for ever.
		w.brokenSince = time.Time{}
	}
}

// event delivers a change unless it was delivered on an earlier stream.
func (w *watcher[T]) event(s *conn, f frame) error {
	if f.Object == nil {
		return withContext(protocolErrorf("%s frame without an object", f.Type), "watch")
	}
	obj, err := w.c.decodeObject(*f.Object)
	if err != nil {
		return err
	}
	rev := obj.Revision
	switch {
	case rev <= w.complete:
		return nil // delivered before the stream was reopened
	case rev == w.cur:
		if _, seen := w.curKeys[obj.Key]; seen {
			return nil
		}
		w.curKeys[obj.Key] = struct{}{}
	default:
		w.complete = max(w.complete, w.cur)
		w.cur = rev
		if w.curKeys == nil {
			w.curKeys = make(map[string]struct{})
		}
		clear(w.curKeys)
		w.curKeys[obj.Key] = struct{}{}
	}
	// A cause that is not a traceparent is dropped, as a header's would be.
	cause, _ := traceparent.Clean(f.Cause)
	return w.deliver(s, store.Event[T]{Type: frameEvents[f.Type], Object: obj, Cause: cause})
}

// deliver hands ev to the consumer. The silence timer is paused meanwhile:
// a consumer that does not read is not a silent server.
func (w *watcher[T]) deliver(s *conn, ev store.Event[T]) error {
	select {
	case w.events <- ev:
		return nil
	default:
	}
	s.timer.Stop()
	defer s.timer.Reset(s.silence)
	select {
	case w.events <- ev:
		return nil
	case <-w.ctx.Done():
		return w.ctx.Err()
	}
}

// checkWatch checks a Watch call's arguments: a context, a valid prefix
// and a valid revision to watch after.
func checkWatch(ctx context.Context, prefix string, after int64) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if err := store.ValidatePrefix(prefix); err != nil {
		return err
	}
	return store.ValidateRevision(after)
}
