package httpstore_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/stretchr/testify/require"
)

// restartable stands for a server process: Restart cuts every connection
// and answers 503 (as a proxy in front of a restarting process would)
// until Up installs a new handler over the same store.
type restartable struct {
	srv  *httptest.Server
	h    atomic.Pointer[http.Handler]
	down chan struct{} // receives on every request refused while down
}

func newRestartable(t *testing.T) *restartable {
	r := &restartable{down: make(chan struct{}, 100)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if h := r.h.Load(); h != nil {
			(*h).ServeHTTP(w, req)
			return
		}
		select {
		case r.down <- struct{}{}:
		default:
		}
		http.Error(w, "restarting", http.StatusServiceUnavailable)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *restartable) up(t *testing.T, m store.Store[*item]) {
	h, err := httpstore.NewHandler(m)
	require.NoError(t, err)
	var hh http.Handler = h
	r.h.Store(&hh)
}

// restart takes the server down and waits until a client has been
// refused.
func (r *restartable) restart(t *testing.T) {
	r.h.Store(nil)
	r.srv.CloseClientConnections()
	select {
	case <-r.down:
	case <-time.After(10 * time.Second):
		t.Fatal("no client came back while the server was down")
	}
}

// watchRestartable serves a memory store on a restartable server and
// returns a watch of it that has received three writes.
func watchRestartable(t *testing.T) (*store.Memory[*item], *restartable, store.Watcher[*item]) {
	m := store.NewMemory[*item]()
	t.Cleanup(func() { _ = m.Close() })
	r := newRestartable(t)
	r.up(t, m)
	c := client[*item](t, r.srv.URL, httpstore.WithWatchTimeout(10*time.Second))
	w, err := c.Watch(t.Context(), "", 0)
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	require.Equal(t, writeN(t, m, 0, 3), receiveN(t, w, 3))
	return m, r, w
}

func receiveN(t *testing.T, w store.Watcher[*item], n int) []store.Event[*item] {
	t.Helper()
	var got []store.Event[*item]
	for range n {
		select {
		case ev, ok := <-w.Events():
			require.True(t, ok, "the watch ended: %v", w.Err())
			got = append(got, ev)
		case <-time.After(10 * time.Second):
			t.Fatalf("no event after %d", len(got))
		}
	}
	return got
}

func writeN(t *testing.T, m store.Store[*item], from, n int) []store.Event[*item] {
	t.Helper()
	var want []store.Event[*item]
	for i := from; i < from+n; i++ {
		obj, err := m.Create(t.Context(), fmt.Sprint("k", i), &item{N: i})
		require.NoError(t, err)
		want = append(want, store.Event[*item]{Type: store.Created, Object: obj})
	}
	return want
}

// TestWatchResumesAfterServerRestartWithoutLossOrDuplicates: the server
// goes away mid-watch, writes happen meanwhile, a new server over the same
// store comes up: the watch delivers exactly the missed writes, in order,
// and nothing else.
func TestWatchResumesAfterServerRestartWithoutLossOrDuplicates(t *testing.T) {
	m, r, w := watchRestartable(t)

	r.restart(t)
	missed := writeN(t, m, 3, 3)
	r.up(t, m)
	require.Equal(t, missed, receiveN(t, w, 3))
	require.Equal(t, writeN(t, m, 6, 1), receiveN(t, w, 1), "nothing between the missed writes and the next one")
}

// TestWatchResumedAfterCompactionEndsWithErrCompacted: when the server's
// history no longer reaches back to where the watch must resume, the watch
// ends with store.ErrCompacted.
func TestWatchResumedAfterCompactionEndsWithErrCompacted(t *testing.T) {
	m, r, w := watchRestartable(t)

	r.restart(t)
	missed := writeN(t, m, 3, 3)
	require.NoError(t, m.Compact(t.Context(), missed[2].Object.Revision))
	r.up(t, m)
	select {
	case ev, ok := <-w.Events():
		require.False(t, ok, "an event after compaction: %v", ev)
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not end")
	}
	require.ErrorIs(t, w.Err(), store.ErrCompacted)
}

// TestWatchCutInsideASharedRevisionDeliversEachEventOnce: a scripted
// server cuts the first stream after one of two events sharing revision 5;
// the client resumes after revision 4 and delivers the other one, not the
// first again.
func TestWatchCutInsideASharedRevisionDeliversEachEventOnce(t *testing.T) {
	var mu sync.Mutex
	var afters []string
	line := func(w http.ResponseWriter, v any) {
		b, _ := json.Marshal(v)
		_, _ = w.Write(append(b, '\n'))
	}
	obj := func(key string, rev int64) map[string]any {
		return map[string]any{"key": key, "value": map[string]any{"n": rev}, "revision": rev, "createRevision": rev}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		afters = append(afters, r.URL.Query().Get("after"))
		n := len(afters)
		mu.Unlock()
		line(w, map[string]any{"type": "start", "watch": fmt.Sprint(n), "heartbeatMillis": 60000})
		line(w, map[string]any{"type": "created", "object": obj("s/a", 5)})
		if n == 1 {
			return // cut inside revision 5
		}
		line(w, map[string]any{"type": "created", "object": obj("s/b", 5)})
		line(w, map[string]any{"type": "created", "object": obj("s/c", 6)})
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	c := client[*item](t, srv.URL)
	w, err := c.Watch(t.Context(), "s/", 0)
	require.NoError(t, err)
	defer w.Stop()
	var keys []string
	for _, ev := range receiveN(t, w, 3) {
		keys = append(keys, ev.Object.Key)
	}
	require.Equal(t, []string{"s/a", "s/b", "s/c"}, keys)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"0", "4"}, afters, "the second stream resumes after the revision before the cut one")
}
