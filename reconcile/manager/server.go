package manager

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
)

// Limits the manager's HTTP server applies unless ServerOptions says
// otherwise: those httpstore.NewServer sets, generous for a probe, a page
// or an API call, short enough that a client that sends its request a byte
// at a time, or never reads its answer, cannot hold a connection for long.
const (
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxHeaderBytes    = 64 << 10
)

// ServerOptions configure the HTTP server a Manager runs when Options.Server
// is set. The zero limits take the defaults above; a negative limit, an
// unusable token or a malformed host or origin makes New fail with
// ErrInvalid. See the package documentation for what the server protects.
type ServerOptions struct {
	// Addr is the TCP address to listen on (":8080", "127.0.0.1:0"). Ignored
	// when Listener is set.
	Addr string
	// Listener, if set, is served instead of listening on Addr (tests, socket
	// activation). The manager closes it when it stops.
	Listener net.Listener
	// TLS, if set, serves HTTPS with this configuration (certificates, and
	// client certificates with ClientAuth). The caller owns its contents.
	TLS *tls.Config

	// Limits of one connection (see http.Server): ReadHeaderTimeout bounds
	// the reading of a request's headers and ReadTimeout that of the whole
	// request, body included, both from its first byte; WriteTimeout
	// bounds the time from the end of its headers to the end of its
	// answer; IdleTimeout closes a kept-alive connection idle that long;
	// MaxHeaderBytes bounds a request's headers. A handler that streams
	// past them moves its own deadlines with http.ResponseController, as
	// httpstore's watch does; a handler still serving a request when
	// ReadTimeout expires, that did not clear its read deadline, has the
	// request's context cancelled.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int

	// Tokens, if any, are the bearer tokens the server accepts: every
	// request must then carry one ("Authorization: Bearer TOKEN") or is
	// answered 401 with "WWW-Authenticate: Bearer" and reaches no
	// handler. GET and HEAD of /healthz and /readyz are answered without
	// a token, but then only with the status and "ok", "unready" or
	// "unhealthy". The header reaches the mounted handlers unchanged, so
	// a handler that checks tokens itself (an httpstore.Handler with its
	// own read-only and read-write tokens) still decides what each may
	// do: list here every token its clients use. An empty token, or one
	// with white space at an end or a control character, is ErrInvalid.
	// New reads the tokens once; they are never logged or shown in errors.
	Tokens []string
	// AllowedHosts are further host names (without scheme or port) that a
	// request's Host header may name, such as the machine's DNS name when
	// the server listens beyond loopback. IP literals, "localhost" and
	// names under ".localhost" are always allowed; "*" allows every name
	// and gives up the defence against DNS rebinding.
	AllowedHosts []string
	// TrustedOrigins are origins ("https://console.example:8443") whose
	// pages may send state-changing requests; requests from any other
	// origin but the server's own are refused.
	TrustedOrigins []string
}

// Handle mounts h on the manager's HTTP server at pattern (an http.ServeMux
// pattern, such as "/store/" or "GET /debug/"), beside /healthz and
// /readyz, which are always served. Every request reaches h only past the
// server's limits, Host and origin checks and tokens (see the package
// documentation). It fails with ErrAlreadyRunning once Run has started, and with
// ErrInvalid without Options.Server, for a nil handler, or for a pattern
// the mux refuses (a duplicate included).
func (m *Manager) Handle(pattern string, h http.Handler) (err error) {
	if h == nil {
		return fmt.Errorf("%w: nil handler for %q", ErrInvalid, pattern)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.phase != phaseIdle {
		return fmt.Errorf("%w: cannot mount %q", ErrAlreadyRunning, pattern)
	}
	if m.mux == nil {
		return fmt.Errorf("%w: Handle needs Options.Server", ErrInvalid)
	}
	defer func() { // ServeMux panics on a bad or duplicate pattern
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: pattern %q: %v", ErrInvalid, pattern, p)
		}
	}()
	m.mux.Handle(pattern, h)
	return nil
}

// Addr returns the address the HTTP server listens on once Run has started
// it (useful with Addr ":0"), or nil.
func (m *Manager) Addr() net.Addr {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.listener == nil {
		return nil
	}
	return m.listener.Addr()
}

// httpServer is the runnable that serves the manager's mux behind its
// front (see access.go). It is added first, so that probes answer while
// the controllers start, and it is not leader-only: followers serve too.
type httpServer struct {
	m     *Manager
	opts  ServerOptions
	front *front
}

// newHTTPServer checks o and returns the server for m, whose mux starts
// with the probes.
func newHTTPServer(m *Manager, o ServerOptions) (*httpServer, error) {
	if err := validateServer(&o); err != nil {
		return nil, err
	}
	f, err := newFront(m, o)
	if err != nil {
		return nil, err
	}
	return &httpServer{m: m, opts: o, front: f}, nil
}

func (s *httpServer) Name() string { return "http" }

// Run listens (unless given a listener), serves until ctx ends, then shuts
// down gracefully: no new connections; requests in flight (their contexts
// are not cancelled) and streams get half the manager's shutdown timeout,
// after which the connections left are closed, so that the server is gone
// before the manager's own deadline. Shutdown runs the hooks handlers
// registered on the http.Server (RegisterOnShutdown), so that a handler
// that ends its streams then does not wait for that fallback.
func (s *httpServer) Run(ctx context.Context) error {
	ln := s.opts.Listener
	if ln == nil {
		var err error
		if ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", s.opts.Addr); err != nil {
			return fmt.Errorf("listen: %w", err)
		}
	}
	if s.opts.TLS != nil {
		ln = tls.NewListener(ln, s.opts.TLS)
	}
	s.m.mu.Lock()
	s.m.listener = ln
	s.m.mu.Unlock()
	srv := s.newServer(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.m.log.Info("http server stopping", "addr", ln.Addr().String())
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.m.shutdownTimeout/2)
	defer cancel()
	err := srv.Shutdown(shutdown)
	if err != nil {
		srv.Close() // streams that outlived the timeout
	}
	if serveErr := <-served; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}

// newServer returns the http.Server for one Run: the front, and the
// limits with their defaults filled in.
func (s *httpServer) newServer(ctx context.Context) *http.Server {
	return &http.Server{
		Handler:           s.front,
		ReadHeaderTimeout: orDefault(s.opts.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		ReadTimeout:       orDefault(s.opts.ReadTimeout, DefaultReadTimeout),
		WriteTimeout:      orDefault(s.opts.WriteTimeout, DefaultWriteTimeout),
		IdleTimeout:       orDefault(s.opts.IdleTimeout, DefaultIdleTimeout),
		MaxHeaderBytes:    orDefault(s.opts.MaxHeaderBytes, DefaultMaxHeaderBytes),
		// Requests outlive the start of the shutdown (a write in flight
		// completes); what is still running at its end is closed.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ErrorLog:    slog.NewLogLogger(s.m.log.Handler(), slog.LevelWarn),
	}
}

func orDefault[V int | time.Duration](v, def V) V {
	if v == 0 {
		return def
	}
	return v
}

// validateServer checks the address and limits of ServerOptions; newFront
// checks its tokens and policy.
func validateServer(o *ServerOptions) error {
	switch {
	case o.Listener == nil && strings.TrimSpace(o.Addr) == "":
		return fmt.Errorf("%w: Server needs Addr or Listener", ErrInvalid)
	case o.ReadHeaderTimeout < 0, o.ReadTimeout < 0, o.WriteTimeout < 0, o.IdleTimeout < 0, o.MaxHeaderBytes < 0:
		return fmt.Errorf("%w: negative server limit", ErrInvalid)
	}
	return nil
}
