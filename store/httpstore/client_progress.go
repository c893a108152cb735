package httpstore

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/converge-go/converge/store"
)

// RequestProgress asks for a Progress event (see store.ProgressRequester)
// and returns without waiting for it. The request travels as its own HTTP
// request: the server reads its store's revision R0 (at least the revision
// at the time of this call), asks its store's watch for progress, and the
// stream's next progress frame at or above R0 answers, after every change
// up to it. If that request fails, the watch ends with
// store.ErrUnavailable. A store whose watches are not
// store.ProgressRequesters never answers.
func (w *watcher[T]) RequestProgress(ctx context.Context) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	select {
	case <-w.done:
		return fmt.Errorf("httpstore: %w: progress request on a watch that has ended", store.ErrUnavailable)
	default:
	}
	w.mu.Lock()
	w.reqSeq++
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default: // a send is due anyway; it carries the latest number
	}
	return nil
}

// requestLoop sends the progress requests, one at a time.
func (w *watcher[T]) requestLoop() {
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-w.kick:
		}
		w.mu.Lock()
		seq, id := w.reqSeq, w.streamID
		w.mu.Unlock()
		rev, err := w.sendProgress(id, seq)
		if err != nil && w.ctx.Err() != nil {
			return // the watch is ending anyway, and says why
		}
		if err != nil {
			w.fail(withContext(err, "watch: progress request"))
			return
		}
		w.mu.Lock()
		w.knownSeq = max(w.knownSeq, seq)
		w.reqRev = max(w.reqRev, rev)
		w.mu.Unlock()
	}
}

func (w *watcher[T]) sendProgress(id string, seq int64) (int64, error) {
	ctx, cancel := context.WithTimeout(w.ctx, w.c.openTimeout())
	defer cancel()
	q := url.Values{paramWatch: {id}, paramSeq: {strconv.FormatInt(seq, 10)}}
	var body revisionBody
	err := w.c.call(ctx, http.MethodPost, pathProgress, q, nil, false, &body)
	return body.Revision, err
}

// fail ends the watch with err (unless it ends otherwise first).
func (w *watcher[T]) fail(err error) {
	w.mu.Lock()
	if w.failed == nil {
		w.failed = err
	}
	w.mu.Unlock()
	w.cancel()
}

// answers reports whether a progress frame at rev, answering request
// number answers, answers every request made so far, and if so records it.
func (w *watcher[T]) answers(rev, answers int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.doneSeq == w.reqSeq {
		return false
	}
	if answers >= w.reqSeq || w.knownSeq == w.reqSeq && rev >= w.reqRev {
		w.doneSeq = w.reqSeq
		return true
	}
	return false
}

// progress records a progress frame and delivers it if it answers a
// request.
func (w *watcher[T]) progress(s *conn, f frame) error {
	if f.Revision >= w.cur {
		w.complete = max(w.complete, f.Revision)
		w.cur = 0
		clear(w.curKeys)
	}
	if !w.answers(f.Revision, f.Answers) {
		return nil
	}
	return w.deliver(s, store.Event[T]{Type: store.Progress, Object: store.Object[T]{Revision: f.Revision}})
}
