package httpstore

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
)

func TestAServerThatIsGoneIsForgotten(t *testing.T) {
	var s shutdowns
	for range 10 {
		srv := &http.Server{}
		r := httptest.NewRequestWithContext(context.WithValue(context.Background(), http.ServerContextKey, srv), http.MethodGet, "/", nil)
		if s.of(r) == nil {
			t.Fatal("no channel for a request served by a server")
		}
		if first, second := s.of(r), s.of(r); first != second {
			t.Fatal("a second channel for the same server")
		}
	}
	left := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.servers)
	}
	// Cleanups run after a collection, on a goroutine of the runtime's.
	for i := 0; i < 1000 && left() > 0; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	if n := left(); n > 0 {
		t.Fatalf("%d servers no longer referenced are still held", n)
	}
}

func TestARequestServedByNoServerNeverSeesAShutdown(t *testing.T) {
	var s shutdowns
	if ch := s.of(httptest.NewRequest(http.MethodGet, "/", nil)); ch != nil {
		t.Fatal("a channel for a request that no http.Server serves")
	}
}
