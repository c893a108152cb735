package httpstore_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/stretchr/testify/require"
)

// muteable serves h until muted; from then on every response stops: a
// stream in progress writes nothing more, and a new request is held
// without an answer until its client goes away. It models a server (or a
// network path) that dies without closing its connections.
type muteable struct {
	h     http.Handler
	muted atomic.Bool
}

func (m *muteable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if m.muted.Load() {
		<-r.Context().Done()
		return
	}
	m.h.ServeHTTP(&muteWriter{w, m, r}, r)
}

type muteWriter struct {
	http.ResponseWriter
	m *muteable
	r *http.Request
}

func (w *muteWriter) Write(b []byte) (int, error) {
	if w.m.muted.Load() {
		<-w.r.Context().Done()
		return 0, w.r.Context().Err()
	}
	return w.ResponseWriter.Write(b)
}

func (w *muteWriter) Flush() {
	if !w.m.muted.Load() {
		w.ResponseWriter.(http.Flusher).Flush()
	}
}

// TestSilentServerEndsTheWatchWithinTwoWatchTimeouts: a server that stops
// sending (and answers no new stream) ends a watch with
// store.ErrUnavailable no later than two watch timeouts (the documented
// bound; the default timeout is two heartbeats) after it went silent, and
// the watch delivered everything written before.
func TestSilentServerEndsTheWatchWithinTwoWatchTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const heartbeat = time.Second
		m := store.NewMemory[*item]()
		defer m.Close()
		h, err := httpstore.NewHandler[*item](m, httpstore.WithHeartbeat(heartbeat))
		require.NoError(t, err)
		mute := &muteable{h: h}
		c := servePipe(t, mute)

		w, err := c.Watch(t.Context(), "", 0)
		require.NoError(t, err)
		defer w.Stop()
		obj, err := m.Create(t.Context(), "a", &item{N: 1})
		require.NoError(t, err)
		require.Equal(t, obj, (<-w.Events()).Object)

		// Heartbeats go on while the server lives: the watch stays open
		// for many timeouts.
		time.Sleep(10 * heartbeat)
		synctest.Wait()
		select {
		case ev, ok := <-w.Events():
			t.Fatalf("a live server's quiet watch delivered %v (open: %v, err %v)", ev, ok, w.Err())
		default:
		}

		mute.muted.Store(true)
		silent := time.Now()
		_, ok := <-w.Events()
		require.False(t, ok, "the watch ends")
		require.ErrorIs(t, w.Err(), store.ErrUnavailable)
		took := time.Since(silent)
		bound := 2 * (2 * heartbeat)
		require.LessOrEqual(t, took, bound, "the silent server was detected after %v", took)
		require.GreaterOrEqual(t, took, heartbeat, "the watch ended before a heartbeat was missed")
	})
}

// TestProgressRequestIsAnsweredAfterTheEventsBeforeIt over the network in
// a bubble: the answer to RequestProgress arrives without waiting for a
// heartbeat, after every event written before the request.
func TestProgressRequestIsAnsweredWithoutWaitingForAHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := store.NewMemory[*item]()
		defer m.Close()
		h, err := httpstore.NewHandler[*item](m, httpstore.WithHeartbeat(time.Hour))
		require.NoError(t, err)
		c := servePipe(t, h)
		w, err := c.Watch(t.Context(), "p/", 0)
		require.NoError(t, err)
		defer w.Stop()
		var last int64
		for i := range 3 {
			obj, err := m.Create(t.Context(), "p/"+string(rune('a'+i)), &item{N: i})
			require.NoError(t, err)
			last = obj.Revision
		}
		_, err = m.Create(t.Context(), "other", &item{})
		require.NoError(t, err)
		start := time.Now()
		require.NoError(t, w.(store.ProgressRequester).RequestProgress(t.Context()))
		for range 3 {
			ev := <-w.Events()
			require.NotEqual(t, store.Progress, ev.Type)
		}
		ev := <-w.Events()
		require.Equal(t, store.Progress, ev.Type)
		require.GreaterOrEqual(t, ev.Object.Revision, last+1, "the answer covers the store's revision at the request")
		require.Less(t, time.Since(start), time.Hour, "answered without a heartbeat")
	})
}
