package httpstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/converge-go/converge/store"
)

// watch serves a watch as a stream of newline-delimited JSON frames: a
// start frame naming the stream and its heartbeat, then the store's events
// in order, a progress frame for every Progress event of the store's watch,
// a ping every heartbeat, and an end frame with the reason if the store's
// watch ends. The stream lasts until the client goes away, the store's
// watch ends, a batch of frames cannot be written within two heartbeats
// (a client that stopped reading), or the http.Server serving it begins
// Shutdown: the stream then ends at once with an end frame saying
// unavailable, so that the client resumes elsewhere or after the restart,
// and a watch asked of that server afterwards is refused (503,
// unavailable).
//
// Frames are written in batches: an event that follows the previous write
// by watchBatchDelay or more is written at once; one that follows sooner
// waits until watchBatchDelay after that write, with every event that
// arrives meanwhile. So under a steady stream of changes a stream costs one
// write per watchBatchDelay rather than one per event, and no event waits
// longer than watchBatchDelay.
func (h *Handler[T]) watch(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r.URL.RawQuery, paramPrefix, paramAfter)
	if err != nil {
		return err
	}
	prefix, err := q.str(paramPrefix, false)
	if err != nil {
		return err
	}
	after, err := q.int(paramAfter, true)
	if err != nil {
		return err
	}
	ending := h.ending.of(r)
	select {
	case <-ending:
		return errShuttingDown
	default:
	}
	select {
	case h.watches <- struct{}{}:
		defer func() { <-h.watches }()
	default:
		return fmt.Errorf("%w: the server serves %d watches, its limit", ErrTooManyWatches, cap(h.watches))
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sw, err := h.s.Watch(ctx, prefix, after)
	if err != nil {
		return err
	}
	defer sw.Stop()
	pr, _ := sw.(store.ProgressRequester)
	st := h.streams.add(pr)
	defer h.streams.remove(st)

	out := newFrameWriter(w, 2*h.cfg.heartbeat, h.enc.trusted)
	defer out.release()
	_ = out.rc.SetReadDeadline(time.Time{}) // a stream outlives the server's ReadTimeout
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if out.send(frame{Type: frameStart, Watch: st.id, HeartbeatMillis: h.cfg.heartbeat.Milliseconds()}) != nil || out.flush() != nil {
		return nil
	}
	h.stream(ctx, sw, st, out, ending)
	return nil
}

// stream writes the frames of a started watch stream until it ends (see
// watch).
func (h *Handler[T]) stream(ctx context.Context, sw store.Watcher[T], st *stream, out *frameWriter, ending <-chan struct{}) {
	pr, _ := sw.(store.ProgressRequester)
	ticker := time.NewTicker(h.cfg.heartbeat)
	defer ticker.Stop()
	batch := time.NewTimer(watchBatchDelay)
	defer batch.Stop()
	var batchDue <-chan time.Time // batch.C while events wait for it
	lastWrite := time.Now()
	write := func() error {
		batchDue = nil
		lastWrite = time.Now()
		return out.flush()
	}
	for {
		select {
		case ev, ok := <-sw.Events():
			if !ok {
				out.end(sw.Err())
				return
			}
			if err := h.sendEvent(out, st, ev); err != nil {
				out.end(err)
				return
			}
			if out.full() {
				if write() != nil {
					return
				}
				continue
			}
			if batchDue != nil || len(sw.Events()) > 0 {
				continue // written with the batch, or with the events queued behind it
			}
			if wait := watchBatchDelay - time.Since(lastWrite); wait > 0 {
				batch.Reset(wait)
				batchDue = batch.C
				continue
			}
			if write() != nil {
				return
			}
		case <-batchDue:
			if write() != nil {
				return
			}
		case <-ticker.C:
			if pr != nil {
				_ = pr.RequestProgress(ctx) // failing, the watch ends and says why
			}
			if out.send(frame{Type: framePing}) != nil || write() != nil {
				return
			}
		case <-ending:
			out.end(errShuttingDown)
			return
		case <-ctx.Done():
			return
		}
	}
}

// sendEvent adds the frame of one event of the store's watch to the batch.
func (h *Handler[T]) sendEvent(out *frameWriter, st *stream, ev store.Event[T]) error {
	f, err := h.eventFrame(st, ev)
	if err != nil {
		return err
	}
	return out.send(f)
}

// errShuttingDown ends the watches of a server that is shutting down.
var errShuttingDown = fmt.Errorf("%w: the server is shutting down", store.ErrUnavailable)

// eventFrame encodes one event of the store's watch.
func (h *Handler[T]) eventFrame(st *stream, ev store.Event[T]) (frame, error) {
	if ev.Type == store.Progress {
		return frame{Type: frameProgress, Revision: ev.Object.Revision, Answers: st.answered(ev.Object.Revision)}, nil
	}
	typ, ok := eventFrames[ev.Type]
	if !ok {
		return frame{}, fmt.Errorf("httpstore: the store's watch sent an event of type %v", ev.Type)
	}
	wo, err := h.object(ev.Object)
	if err != nil {
		return frame{}, err
	}
	return frame{Type: typ, Object: &wo, Cause: ev.Cause}, nil
}

// endFrame reports why the store's watch ended. A watch that ends without
// an error was not stopped by the client (the stream would be gone): it is
// reported as unavailable, and the client resumes.
func endFrame(err error) frame {
	if err == nil {
		err = fmt.Errorf("%w: the store ended the watch", store.ErrUnavailable)
	}
	we := wireErrorOf(err)
	return frame{Type: frameEnd, Error: &we}
}

// watchBatchDelay is the longest an event of a watch stream waits to be
// written with the events that follow it (see Handler.watch).
const watchBatchDelay = time.Millisecond

// maxBatchBytes is the size at which a batch of frames is written without
// waiting for more.
const maxBatchBytes = 32 << 10

// frameWriter collects the frames of one stream and writes them in
// batches, each within a deadline.
type frameWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	buf     *bytes.Buffer
	compact bool // values are the store's compact JSON (valueEncoder.trusted)
	timeout time.Duration
}

func newFrameWriter(w http.ResponseWriter, timeout time.Duration, compact bool) *frameWriter {
	return &frameWriter{w: w, rc: http.NewResponseController(w), buf: getBuf(), compact: compact, timeout: timeout}
}

// send adds fr to the batch.
func (f *frameWriter) send(fr frame) error { return appendFrame(f.buf, &fr, f.compact) }

// full reports whether the batch should be written without waiting.
func (f *frameWriter) full() bool { return f.buf.Len() >= maxBatchBytes }

// flush writes the batch within the deadline and sends it to the client.
func (f *frameWriter) flush() error {
	if err := f.rc.SetWriteDeadline(time.Now().Add(f.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	if f.buf.Len() > 0 {
		_, err := f.w.Write(f.buf.Bytes())
		f.buf.Reset()
		if err != nil {
			return err
		}
	}
	return f.rc.Flush()
}

// end adds the end frame saying why the stream ends and writes the batch.
func (f *frameWriter) end(why error) {
	_ = f.send(endFrame(why))
	_ = f.flush()
}

// release returns the batch's buffer; the writer is not used afterwards.
func (f *frameWriter) release() { putBuf(f.buf) }

// progress serves a progress request for a watch stream: it reads the
// store's revision, marks the request (numbered by the client) on the
// stream if this handler serves it, asks the store's watch for progress,
// and answers with the revision read. The stream's next progress frame at
// or above it carries the request's number. A stream served elsewhere (the
// client reconnected, or a load balancer spread its requests) is not an
// error: the client then takes the first progress frame at or above the
// revision as the answer.
func (h *Handler[T]) progress(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r.URL.RawQuery, paramWatch, paramSeq)
	if err != nil {
		return err
	}
	id, err := q.str(paramWatch, true)
	if err != nil {
		return err
	}
	seq, err := q.int(paramSeq, true)
	if err != nil {
		return err
	}
	if seq < 1 {
		return fmt.Errorf("%w: progress request number %d, want at least 1", store.ErrInvalid, seq)
	}
	rev, err := h.s.Revision(r.Context())
	if err != nil {
		return err
	}
	if st := h.streams.find(id); st != nil && st.requester != nil {
		st.pending(seq, rev)
		if err := st.requester.RequestProgress(r.Context()); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, revisionBody{Revision: rev})
	return nil
}
