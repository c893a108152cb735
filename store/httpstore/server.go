package httpstore

import (
	"net/http"
	"time"
)

// Timeouts and limits NewServer sets.
const (
	// ServerReadHeaderTimeout bounds the reading of a request's headers: a
	// client that sends them slowly is cut off.
	ServerReadHeaderTimeout = 5 * time.Second
	// ServerReadTimeout bounds the reading of a whole request, body
	// included. Watch streams clear it once their request is read.
	ServerReadTimeout = 30 * time.Second
	// ServerWriteTimeout bounds the writing of a response. Watch streams
	// replace it with a deadline of two heartbeats per frame.
	ServerWriteTimeout = 30 * time.Second
	// ServerIdleTimeout closes kept-alive connections idle for this long.
	ServerIdleTimeout = 2 * time.Minute
	// ServerMaxHeaderBytes bounds a request's headers and query string:
	// room for a key, a prefix and a few guards of store.MaxKeyLen bytes
	// each, percent-encoded.
	ServerMaxHeaderBytes = 64 << 10
)

// NewServer returns an *http.Server for h on addr with the timeouts and
// limits above, which are what this package recommends for serving a store
// (the zero http.Server has none: a client sending its headers one byte a
// minute would hold a connection for ever). Set TLSConfig on it, or call
// ServeTLS, to serve over TLS; require client certificates with
// tls.RequireAndVerifyClientCert in that configuration.
func NewServer(addr string, h http.Handler) *http.Server {
	srv := &http.Server{Addr: addr, Handler: h}
	ApplyServerDefaults(srv)
	return srv
}

// ApplyServerDefaults sets on srv the timeouts and limits NewServer sets,
// for servers built elsewhere (httptest, your own).
func ApplyServerDefaults(srv *http.Server) {
	srv.ReadHeaderTimeout = ServerReadHeaderTimeout
	srv.ReadTimeout = ServerReadTimeout
	srv.WriteTimeout = ServerWriteTimeout
	srv.IdleTimeout = ServerIdleTimeout
	srv.MaxHeaderBytes = ServerMaxHeaderBytes
}
