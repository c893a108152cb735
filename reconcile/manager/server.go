package manager

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// Server limits the manager's HTTP server applies unless ServerOptions
// says otherwise: generous for a probe or an API call, short enough that a
// client that sends its headers one byte at a time or never reads cannot
// hold a connection for long.
const (
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxHeaderBytes    = 64 << 10
)

// ServerOptions configure the HTTP server a Manager runs when Options.Server
// is set. Zero fields take the defaults above.
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
	// ReadHeaderTimeout, IdleTimeout and MaxHeaderBytes bound what one
	// connection may hold (see http.Server). Handlers that stream (a
	// store watch) set their own write deadlines, so no WriteTimeout is
	// applied to the whole server.
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
}

// Handle mounts h on the manager's HTTP server at pattern (an http.ServeMux
// pattern, such as "/store/" or "GET /debug/"), beside /healthz and
// /readyz, which are always served. It fails with ErrStarted once Run has
// begun, and with ErrInvalid without Options.Server, for a nil handler, or
// for a pattern the mux refuses (a duplicate included).
func (m *Manager) Handle(pattern string, h http.Handler) (err error) {
	if h == nil {
		return fmt.Errorf("%w: nil handler for %q", ErrInvalid, pattern)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.phase != phaseIdle {
		return fmt.Errorf("%w: cannot mount %q", ErrStarted, pattern)
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

// newMux returns the mux every server starts with: the probes.
func (m *Manager) newMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", m.Healthz())
	mux.Handle("GET /readyz", m.Readyz())
	return mux
}

// httpServer is the runnable that serves the manager's mux. It is added
// first, so that probes answer while the controllers start, and it is not
// leader-only: followers serve too.
type httpServer struct {
	m    *Manager
	opts ServerOptions
}

func (s *httpServer) Name() string { return "http" }

// Run listens (unless given a listener), serves until ctx ends, then shuts
// down gracefully: no new connections; requests in flight (their contexts
// are not cancelled) and streams get half the manager's shutdown timeout,
// after which the connections left are closed, so that the server is gone
// before the manager's own deadline.
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
	srv := &http.Server{
		Handler:           s.m.mux,
		ReadHeaderTimeout: orDefault(s.opts.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		IdleTimeout:       orDefault(s.opts.IdleTimeout, DefaultIdleTimeout),
		MaxHeaderBytes:    orDefault(s.opts.MaxHeaderBytes, DefaultMaxHeaderBytes),
		// Requests outlive the start of the shutdown (a write in flight
		// completes); what is still running at its end is closed.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
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

func orDefault[V int | time.Duration](v, def V) V {
	if v == 0 {
		return def
	}
	return v
}

// validateServer checks ServerOptions.
func validateServer(o *ServerOptions) error {
	switch {
	case o.Listener == nil && strings.TrimSpace(o.Addr) == "":
		return fmt.Errorf("%w: Server needs Addr or Listener", ErrInvalid)
	case o.ReadHeaderTimeout < 0, o.IdleTimeout < 0, o.MaxHeaderBytes < 0:
		return fmt.Errorf("%w: negative server limit", ErrInvalid)
	}
	return nil
}
