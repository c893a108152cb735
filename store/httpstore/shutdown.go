package httpstore

import (
	"net/http"
	"runtime"
	"sync"
	"weak"
)

// shutdowns tells a handler's watch streams when the http.Server serving
// them begins to shut down. http.Server.Shutdown waits for every active
// request, and a watch stream never ends by itself: so the handler
// registers, once per server it serves watches on (it learns the server
// from the request's context, http.ServerContextKey), a function that
// Shutdown calls at once and that ends those streams. A server's entry
// goes when the server is garbage, so the handler keeps no server alive.
type shutdowns struct {
	mu      sync.Mutex
	servers map[weak.Pointer[http.Server]]chan struct{} // closed when Shutdown begins
}

// of returns a channel closed once the server serving r has begun to shut
// down; nil (never closed) if r came from no http.Server. The first call
// for a server registers with it.
func (s *shutdowns) of(r *http.Request) <-chan struct{} {
	srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
	if srv == nil {
		return nil
	}
	key := weak.Make(srv)
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.servers[key]; ok {
		return ch
	}
	if s.servers == nil {
		s.servers = make(map[weak.Pointer[http.Server]]chan struct{})
	}
	ch := make(chan struct{})
	s.servers[key] = ch
	srv.RegisterOnShutdown(func() { close(ch) })
	runtime.AddCleanup(srv, s.forget, key)
	return ch
}

// forget drops a server that is gone.
func (s *shutdowns) forget(key weak.Pointer[http.Server]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.servers, key)
}
