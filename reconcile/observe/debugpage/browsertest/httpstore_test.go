package browsertest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
)

// statusRecorder counts the answers a handler gives to the POSTs that
// reach it, by status.
type statusRecorder struct {
	h http.Handler

	mu       sync.Mutex
	statuses map[int]int
}

func (s *statusRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		s.h.ServeHTTP(w, r)
		return
	}
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	s.h.ServeHTTP(sw, r)
	s.mu.Lock()
	s.statuses[sw.status]++
	s.mu.Unlock()
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

// TestAWebPageCannotWriteToAServedStore serves a store without tokens (the
// case where only the handler's checks stand between a page and the store)
// with a value type that takes any JSON object, and lets the hostile pages
// attack its create, update and delete: every POST that reaches the
// handler is refused, with 403 (another origin, a foreign Host) or 415
// (not JSON), and the store holds what it held before, at the same
// revision.
func TestAWebPageCannotWriteToAServedStore(t *testing.T) {
	ctx := hostileBrowser(t)
	m := store.NewMemory[map[string]any]()
	defer m.Close()
	seed, err := m.Create(context.Background(), "jobs/seed", map[string]any{"spec": "kept"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpstore.NewHandler[map[string]any](m)
	if err != nil {
		t.Fatal(err)
	}
	rec := &statusRecorder{h: h, statuses: map[int]int{}}
	mux := http.NewServeMux()
	mux.Handle(hostilePagePath, hostilePageHandler())
	mux.Handle("/v1/", rec)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, target := range []string{
		"/v1/create?key=jobs/x",
		fmt.Sprintf("/v1/update?key=jobs/seed&revision=%d", seed.Revision),
		fmt.Sprintf("/v1/delete?key=jobs/seed&revision=%d", seed.Revision),
	} {
		for _, line := range attackFromHostilePages(t, ctx, srv.URL+target) {
			t.Log(target, line)
		}
		objs, rev, err := m.List(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		if rev != seed.Revision || len(objs) != 1 || objs[0].Key != seed.Key || objs[0].Revision != seed.Revision {
			t.Fatalf("after the pages attacked %s the store holds %d objects at revision %d (%v); want only %s at %d",
				target, len(objs), rev, objs, seed.Key, seed.Revision)
		}
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	t.Logf("answers to the POSTs that reached the handler, by status: %v", rec.statuses)
	refused := rec.statuses[http.StatusForbidden] + rec.statuses[http.StatusUnsupportedMediaType]
	for status, n := range rec.statuses {
		if status != http.StatusForbidden && status != http.StatusUnsupportedMediaType {
			t.Errorf("%d POSTs answered %d: every page's POST must be refused as forged (403) or not JSON (415)", n, status)
		}
	}
	if refused == 0 {
		t.Errorf("no POST of the pages reached the handler: the attack proves nothing")
	}
}
