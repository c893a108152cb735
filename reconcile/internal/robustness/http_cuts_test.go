package robustness_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
)

// closeConn is a connection whose Close is counted; nothing else of it is
// used.
type closeConn struct {
	net.Conn
	closed int
}

func (c *closeConn) Close() error { c.closed++; return nil }

// cutStream writes a start frame and frames frames to a new cutting
// writer of d, batch frames per write, and returns what reached the
// client and how often the connection was closed.
func cutStream(d *dropper, frames, batch int) (string, int) {
	rec := httptest.NewRecorder()
	conn := &closeConn{}
	w := &cuttingWriter{ResponseWriter: rec, d: d, conn: conn}
	var buf bytes.Buffer
	buf.WriteString(`{"type":"start"}` + "\n")
	for i := range frames {
		fmt.Fprintf(&buf, `{"type":"created","n":%d}`+"\n", i)
		if (i+1)%batch == 0 || i == frames-1 {
			if _, err := w.Write(buf.Bytes()); err != nil {
				break
			}
			buf.Reset()
		}
	}
	return rec.Body.String(), conn.closed
}

// A watch stream is cut at a frame count drawn from the seed, the same
// frame whether the server writes its frames one by one or in batches of
// any size (so a loaded server, writing fewer, larger batches, is cut as
// often), within the schedule's mean gap for the first cut, and halfway
// through that frame.
func TestDropperCutsWatchStreamsAtFrameCountsWhateverTheBatching(t *testing.T) {
	const frames = 200
	p := drops{watchFrame: 0.1}
	for seed := range uint64(20) {
		want, closed := cutStream(newDropper(nil, p, seed, nil), frames, 1)
		if closed != 1 {
			t.Fatalf("seed %d: the connection was closed %d times, want once", seed, closed)
		}
		// The first cut falls on frame k (from 1) after the start frame,
		// k at most 10, and sends half of it.
		k := strings.Count(want, "\n")
		frame := fmt.Sprintf(`{"type":"created","n":%d}`+"\n", k-1)
		if k > 10 || !strings.HasSuffix(want, frame[:len(frame)/2]) || strings.HasSuffix(want, "\n") {
			t.Errorf("seed %d: the client got %q, want the frames before one of the first 10 after the start frame and half of that one", seed, want)
		}
		for _, batch := range []int{3, 16, frames} {
			if got, _ := cutStream(newDropper(nil, p, seed, nil), frames, batch); got != want {
				t.Errorf("seed %d, batches of %d frames: the client got %q, one frame per write %q", seed, batch, got, want)
			}
		}
	}
}
