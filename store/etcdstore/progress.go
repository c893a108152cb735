package etcdstore

import (
	"context"
	"fmt"
	"time"

	"github.com/converge-go/converge/store"
	clientv3 "go.etcd.io/etcd/client/v3"
)

var _ store.ProgressRequester = (*watcher[int])(nil)

// progressRetry is how often an unanswered progress request is sent to the
// watch's member again, and how long the cluster's revision is retried for
// between attempts: etcd ignores a request while the watch is catching up
// and loses one sent while the client is reconnecting the watch.
const progressRetry = 250 * time.Millisecond

// revisionAttempt bounds each read of the cluster's revision for a
// progress request.
const revisionAttempt = time.Second

// RequestProgress asks the watch to send a store.Progress event whose
// revision R is at least the cluster's revision at the time of the call,
// after every change up to R under the watch's prefix. It does not wait:
// the watch reads the cluster's revision (a linearizable read), then asks
// its member, whose answer etcd sends on the watch's own stream after the
// events it covers, and asks again every 250 ms until answered. A watch
// whose member cannot be reached, or has no leader, does not answer; with
// the cluster's revision at or before the watch's start the watch answers
// with its start revision (or its last event's) once the read succeeds.
// Requests made while one is outstanding are answered together.
//
// It fails with store.ErrInvalid for a nil ctx, with ctx's error, and with
// store.ErrUnavailable once the watch has ended.
func (w *watcher[T]) RequestProgress(ctx context.Context) error {
	if err := checkContext(ctx); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-w.ctx.Done():
		return fmt.Errorf("%w: etcdstore: progress request on a watch that has ended", store.ErrUnavailable)
	default:
	}
	select {
	case w.want <- struct{}{}:
	default: // a request is already waiting to be served
	}
	return nil
}

// ask serves progress requests one round at a time until the watch ends.
func (w *watcher[T]) ask() {
	for {
		select {
		case <-w.want:
		case <-w.ctx.Done():
			return
		}
		rev, ok := w.revision()
		if !ok {
			return
		}
		if rev <= w.after {
			// etcd answers a watch that starts in the future only once
			// the cluster gets there; nothing up to after concerns it.
			select {
			case w.synth <- struct{}{}:
			case <-w.ctx.Done():
				return
			}
			continue
		}
		w.mu.Lock()
		w.need = rev
		w.mu.Unlock()
		if !w.request() {
			return
		}
	}
}

// revision reads the cluster's revision, each attempt bounded by
// revisionAttempt and the next one at least progressRetry later, until one
// succeeds; it reports false if the watch ended first.
func (w *watcher[T]) revision() (int64, bool) {
	for {
		pace := time.NewTimer(progressRetry)
		rctx, cancel := context.WithTimeout(w.ctx, revisionAttempt)
		resp, err := w.s.client.Get(rctx, w.s.prefix, clientv3.WithCountOnly())
		cancel()
		if err == nil {
			pace.Stop()
			return resp.Header.Revision, true
		}
		select {
		case <-pace.C:
		case <-w.ctx.Done():
			pace.Stop()
			return 0, false
		}
	}
}

// request asks the watch's member for progress until the forwarder
// answers; it reports false if the watch ended first.
func (w *watcher[T]) request() bool {
	ticker := time.NewTicker(progressRetry)
	defer ticker.Stop()
	for {
		// w.ctx carries the watch's metadata, which names its stream.
		// An error means the stream is reconnecting: ask again later.
		_ = w.s.client.RequestProgress(w.ctx)
		select {
		case <-w.answer:
			return true
		case <-ticker.C:
		case <-w.ctx.Done():
			return false
		}
	}
}

// answers reports whether a progress notification at rev answers the
// outstanding request, and if so clears it and wakes the asker.
func (w *watcher[T]) answers(rev int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.need == 0 || rev < w.need {
		return false
	}
	w.need = 0
	select {
	case w.answer <- struct{}{}:
	default:
	}
	return true
}
