package robustness_test

import (
	"bytes"
	"context"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/converge-go/converge/reconcile/internal/robustness"
)

// drops are how often a dropper cuts connections, as probabilities: a
// request's before it is handled (nothing happens), a request's after it
// was handled (a write took place, or not, and its answer is lost), and a
// watch stream's before one of its frames. The cuts come at counts drawn
// from the seed (robustness.Schedule), never by chance in time.
type drops struct {
	before, after, watchFrame float64
}

// callHeader carries a recorded call's id (robustness.CallID) from the
// client to the server, so that the server can say what became of a call
// whose answer it dropped.
const callHeader = "X-Robustness-Call"

// connKey is the request context key of the connection a request arrived
// on (http.Server.ConnContext).
type connKey struct{}

// withConn is an http.Server.ConnContext that makes the connection
// reachable from its requests.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// dropper is an http.Handler in front of another that closes connections
// at counts drawn from its seed, so that what it cuts does not depend on
// timing (robustness.Schedule: with every = round(1/p), the first cut of
// each kind comes within every counts, each later one 1 to 2*every-1
// counts after the one before):
//
//   - before a request reaches the handler, counting requests (watch
//     streams aside);
//   - after the handler answered a request but before the answer is sent,
//     counting the requests handled; and once after a write the store
//     applied, counting those, so that every run has a cut write that
//     committed;
//   - in the middle of a watch stream, counting the frames written after
//     streams' start frames, whatever batches the server wrote them in:
//     alternately halfway through a frame (first) and before one.
//
// The first stream cut therefore comes within the first `every` frames of
// the run, before the watch can have had `every` events: with every at
// most the watcher's DisconnectEvery, the client is still reading and
// must reconnect by itself. The dropper records in outcomes (if not nil)
// what became of a recorded call it cut before handling; the store side
// records what the handler did for those it cut after. It also moves a
// request's call id from its header to its context.
type dropper struct {
	h        http.Handler
	outcomes *robustness.Outcomes

	// cutBefore, cutAfter and cutFrame schedule the cuts; cutApplied
	// schedules the one cut after a write the store applied, made once
	// appliedCut is set.
	cutBefore, cutAfter, cutApplied, cutFrame *robustness.Schedule
	appliedCut                                atomic.Bool

	mu sync.Mutex
	// beforeIDs and afterIDs hold the recorded calls cut before and after
	// they were handled.
	beforeIDs, afterIDs []uint64

	// before and after count the requests cut before and after handling;
	// cuts the watch streams cut, halves those cut halfway through a
	// frame, and frames the frames counted on watch streams.
	before, after, cuts, halves, frames atomic.Int64
}

func newDropper(h http.Handler, p drops, seed uint64, outcomes *robustness.Outcomes) *dropper {
	return &dropper{
		h: h, outcomes: outcomes,
		cutBefore:  robustness.ScheduleFor(p.before, seed, 0xd501),
		cutAfter:   robustness.ScheduleFor(p.after, seed, 0xd502),
		cutApplied: robustness.ScheduleFor(p.after, seed, 0xd503),
		cutFrame:   robustness.ScheduleFor(p.watchFrame, seed, 0xd504),
	}
}

func (d *dropper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseUint(r.Header.Get(callHeader), 10, 64)
	hasID := err == nil && id != 0
	if hasID {
		r = r.WithContext(robustness.WithCallID(r.Context(), id))
	}
	conn, ok := r.Context().Value(connKey{}).(net.Conn)
	switch {
	case !ok:
		d.h.ServeHTTP(w, r)
	case r.URL.Path == "/v1/watch":
		d.h.ServeHTTP(&cuttingWriter{ResponseWriter: w, d: d, conn: conn}, r)
	case d.cutBefore.Fires():
		if hasID {
			d.outcomes.NotApplied(id)
			d.note(&d.beforeIDs, id)
		}
		d.before.Add(1)
		_ = conn.Close()
	case d.cutAfter.Fires():
		d.h.ServeHTTP(httptest.NewRecorder(), r)
		d.cutAfterHandling(conn, hasID, id)
	case hasID && r.Method == http.MethodPost && d.cutApplied != nil && !d.appliedCut.Load():
		d.serveWrite(w, r, conn, id)
	default:
		d.h.ServeHTTP(w, r)
	}
}

// serveWrite serves a recorded write into a recorder and cuts its answer
// if the store applied it and cutApplied fires on it (once in a run);
// otherwise it sends the answer.
func (d *dropper) serveWrite(w http.ResponseWriter, r *http.Request, conn net.Conn, id uint64) {
	rec := httptest.NewRecorder()
	d.h.ServeHTTP(rec, r)
	if rec.Code/100 == 2 && d.cutApplied.Fires() && d.appliedCut.CompareAndSwap(false, true) {
		d.cutAfterHandling(conn, true, id)
		return
	}
	maps.Copy(w.Header(), rec.Header())
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// cutAfterHandling closes the connection of a request the handler has
// answered (into a recorder), losing the answer.
func (d *dropper) cutAfterHandling(conn net.Conn, hasID bool, id uint64) {
	if hasID {
		d.note(&d.afterIDs, id)
	}
	d.after.Add(1)
	_ = conn.Close()
}

func (d *dropper) note(ids *[]uint64, id uint64) {
	d.mu.Lock()
	*ids = append(*ids, id)
	d.mu.Unlock()
}

// cutCalls returns the recorded calls cut before and after they were
// handled.
func (d *dropper) cutCalls() (before, after []uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.beforeIDs), slices.Clone(d.afterIDs)
}

// cuttingWriter is a watch stream's ResponseWriter that closes the
// connection where the dropper's cutFrame schedule fires, counting the
// frames (newline-terminated) after the stream's start frame in what the
// handler writes. Unwrap lets http.ResponseController reach the server's
// writer (flushes, write deadlines).
type cuttingWriter struct {
	http.ResponseWriter
	d       *dropper
	conn    net.Conn
	started bool // the start frame has begun
	inFrame bool // the last write ended inside a frame
	cut     bool
}

func (c *cuttingWriter) Write(p []byte) (int, error) {
	if c.cut {
		return 0, net.ErrClosed
	}
	starts := c.frameStarts(p)
	i := c.d.cutFrame.FiresWithin(len(starts))
	if i < 0 {
		c.d.frames.Add(int64(len(starts)))
		return c.ResponseWriter.Write(p)
	}
	c.d.frames.Add(int64(i + 1))
	c.cut = true
	keep := p[:starts[i]]
	if c.d.cuts.Add(1)%2 == 1 {
		frame := p[starts[i]:]
		if end := bytes.IndexByte(frame, '\n'); end >= 0 {
			frame = frame[:end+1]
		}
		keep = p[:starts[i]+len(frame)/2]
		c.d.halves.Add(1)
	}
	if len(keep) > 0 {
		_, _ = c.ResponseWriter.Write(keep)
		_ = http.NewResponseController(c.ResponseWriter).Flush()
	}
	_ = c.conn.Close()
	return 0, net.ErrClosed
}

// frameStarts returns the offsets in p at which frames after the stream's
// start frame begin, and notes where p leaves off.
func (c *cuttingWriter) frameStarts(p []byte) []int {
	var starts []int
	for i := 0; i < len(p); {
		if !c.inFrame {
			if c.started {
				starts = append(starts, i)
			}
			c.started = true
		}
		end := bytes.IndexByte(p[i:], '\n')
		if end < 0 {
			c.inFrame = true
			break
		}
		c.inFrame = false
		i += end + 1
	}
	return starts
}

func (c *cuttingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// callTransport sends a recorded call's id in callHeader and counts the
// watch streams it opens.
type callTransport struct {
	base    http.RoundTripper
	streams atomic.Int64
}

func (t *callTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == "/v1/watch" {
		t.streams.Add(1)
	}
	id, ok := robustness.CallID(r.Context())
	if !ok {
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set(callHeader, strconv.FormatUint(id, 10))
	return t.base.RoundTrip(r)
}
