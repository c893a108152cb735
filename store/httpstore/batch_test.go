package httpstore_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/stretchr/testify/require"
)

// flushCounter counts the flushes of the watch streams it serves: each is
// one batch of frames sent to the client.
type flushCounter struct {
	h       http.Handler
	flushes atomic.Int64
}

func (f *flushCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.h.ServeHTTP(&countingWriter{ResponseWriter: w, n: &f.flushes}, r)
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w *countingWriter) FlushError() error {
	w.n.Add(1)
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestWatchStreamWritesABurstOfEventsAsOneBatchWithinAMillisecond: events
// that reach the handler together leave in one write, no later than 1 ms
// after the stream's previous write, in order; an event after a quiet
// spell is written at once.
func TestWatchStreamWritesABurstOfEventsAsOneBatchWithinAMillisecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := store.NewMemory[*item]()
		defer m.Close()
		h, err := httpstore.NewHandler[*item](m, httpstore.WithHeartbeat(time.Hour))
		require.NoError(t, err)
		fc := &flushCounter{h: h}
		c := servePipe(t, fc)
		w, err := c.Watch(t.Context(), "k/", 0)
		require.NoError(t, err)
		defer w.Stop()
		synctest.Wait()

		// The writes arrive one by one, each handled by the stream before
		// the next (synctest.Wait), within a millisecond.
		const burst = 50
		start := time.Now()
		for i := range burst {
			_, err := m.Create(t.Context(), fmt.Sprintf("k/%02d", i), &item{N: i})
			require.NoError(t, err)
			synctest.Wait()
		}
		for i := range burst {
			ev := <-w.Events()
			require.Equal(t, fmt.Sprintf("k/%02d", i), ev.Object.Key, "events in order")
		}
		require.LessOrEqual(t, time.Since(start), time.Millisecond, "the burst waited at most 1 ms")
		synctest.Wait()
		require.Equal(t, int64(2), fc.flushes.Load(), "the start frame, then the whole burst in one write")

		time.Sleep(time.Second)
		before := time.Now()
		_, err = m.Create(t.Context(), "k/late", &item{})
		require.NoError(t, err)
		ev := <-w.Events()
		require.Equal(t, "k/late", ev.Object.Key)
		require.Zero(t, time.Since(before), "an event after a quiet spell does not wait")
		synctest.Wait()
		require.Equal(t, int64(3), fc.flushes.Load())
	})
}
