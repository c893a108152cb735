package robustness_test

import (
	"context"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/converge-go/converge/internal/robustness"
)

// drops are the probabilities with which a dropper cuts a connection: a
// request's before it is handled (nothing happens), a request's after it
// was handled (a write took place, or not, and its answer is lost), and a
// watch stream's before one of its frames (sometimes halfway through the
// frame).
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
// at random points: before a request reaches the handler, after the
// handler answered a request but before the answer is sent, and in the
// middle of a watch stream. So that every run exercises each point, it
// also cuts the answer of the first write that took effect, and a watch
// stream after forcedCutFrames frames, if the dice have not. It records in
// outcomes (if not nil) what became of a recorded call it cut before
// handling; the store side records what the handler did for those it cut
// after. It also moves a request's call id from its header to its context.
type dropper struct {
	h        http.Handler
	p        drops
	outcomes *robustness.Outcomes

	mu  sync.Mutex
	rng *rand.Rand
	// cutBefore and cutAfter hold the recorded calls cut before and after
	// they were handled.
	cutBefore, cutAfter []uint64

	before, after, cuts atomic.Int64
	// cutApplied counts the writes forced to lose an answer that said they
	// took effect; frames counts watch frames written or cut.
	cutApplied, frames atomic.Int64
}

func newDropper(h http.Handler, p drops, seed uint64, outcomes *robustness.Outcomes) *dropper {
	return &dropper{h: h, p: p, outcomes: outcomes, rng: rand.New(rand.NewPCG(seed, 0xd509))}
}

// roll reports whether an event of probability p happens.
func (d *dropper) roll(p float64) bool {
	if p <= 0 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rng.Float64() < p
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
	case d.roll(d.p.before):
		if hasID {
			d.outcomes.NotApplied(id)
			d.cut(&d.cutBefore, id)
		}
		d.before.Add(1)
		_ = conn.Close()
	case d.roll(d.p.after):
		d.h.ServeHTTP(httptest.NewRecorder(), r)
		d.cutAfterHandling(conn, hasID, id)
	case hasID && r.Method == http.MethodPost && d.p.after > 0 && d.cutApplied.Load() == 0:
		// No write that took effect has had its answer cut yet: make sure
		// one does, whatever the dice say, so every run exercises it.
		rec := httptest.NewRecorder()
		d.h.ServeHTTP(rec, r)
		if rec.Code/100 == 2 {
			d.cutApplied.Add(1)
			d.cutAfterHandling(conn, hasID, id)
			return
		}
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	default:
		d.h.ServeHTTP(w, r)
	}
}

// cutAfterHandling closes the connection of a request the handler has
// answered (into a recorder), losing the answer.
func (d *dropper) cutAfterHandling(conn net.Conn, hasID bool, id uint64) {
	if hasID {
		d.cut(&d.cutAfter, id)
	}
	d.after.Add(1)
	_ = conn.Close()
}

func (d *dropper) cut(ids *[]uint64, id uint64) {
	d.mu.Lock()
	*ids = append(*ids, id)
	d.mu.Unlock()
}

// cutCalls returns the recorded calls cut before and after they were
// handled.
func (d *dropper) cutCalls() (before, after []uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.cutBefore), slices.Clone(d.cutAfter)
}

// forcedCutFrames is how many watch frames a dropper that cuts streams
// lets through before it cuts one, if the dice have cut none.
const forcedCutFrames = 100

// cuttingWriter is a watch stream's ResponseWriter that closes the
// connection before a frame, or after sending half of it, with the
// dropper's watchFrame probability. Unwrap lets http.ResponseController
// reach the server's writer (flushes, write deadlines).
type cuttingWriter struct {
	http.ResponseWriter
	d    *dropper
	conn net.Conn
	cut  bool
}

func (c *cuttingWriter) Write(p []byte) (int, error) {
	if c.cut {
		return 0, net.ErrClosed
	}
	// Cut at random, and once anyway if no stream has been cut after
	// forcedCutFrames frames, so every run exercises it.
	n := c.d.frames.Add(1)
	forced := c.d.p.watchFrame > 0 && n >= forcedCutFrames && c.d.cuts.Load() == 0
	if !forced && !c.d.roll(c.d.p.watchFrame) {
		return c.ResponseWriter.Write(p)
	}
	c.cut = true
	c.d.cuts.Add(1)
	if c.d.roll(0.5) && len(p) > 1 {
		_, _ = c.ResponseWriter.Write(p[:len(p)/2])
		_ = http.NewResponseController(c.ResponseWriter).Flush()
	}
	_ = c.conn.Close()
	return 0, net.ErrClosed
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
