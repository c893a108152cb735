package manager

import (
	"fmt"
	"net/http"

	"github.com/converge-go/converge/internal/bearer"
	"github.com/converge-go/converge/internal/httpguard"
)

// front is what every request to the manager's server passes before any
// handler sees it, in this order:
//
//  1. the guard: a Host the server does not answer to, or a state-changing
//     request from another origin's page, is answered 403;
//  2. with tokens, the token check: a request without one of them is
//     answered 401, except the probes, which answer it from public (the
//     status alone);
//  3. the mux: the probes in full and what Handle mounted.
//
// A refusal closes the connection and reaches no handler, so it is
// answered at once, without waiting for a body the client sends slowly.
type front struct {
	m      *Manager
	guard  *httpguard.Guard
	tokens *bearer.Set
	public *http.ServeMux // the probes' summaries
}

// newFront returns the front for m's server and gives m its mux, which
// starts with the probes. A malformed token or policy is ErrInvalid.
func newFront(m *Manager, o ServerOptions) (*front, error) {
	guard, err := httpguard.New(httpguard.Policy{Hosts: o.AllowedHosts, Origins: o.TrustedOrigins})
	if err != nil {
		return nil, fmt.Errorf("%w: Server: %v", ErrInvalid, err)
	}
	tokens, err := bearer.NewSet(o.Tokens)
	if err != nil {
		return nil, fmt.Errorf("manager: Server.Tokens: %w", err)
	}
	m.mux = http.NewServeMux()
	m.mux.Handle("GET /healthz", m.Healthz())
	m.mux.Handle("GET /readyz", m.Readyz())
	public := http.NewServeMux()
	public.Handle("GET /healthz", m.probe(m.Healthy, summaryUnhealthy))
	public.Handle("GET /readyz", m.probe(m.Ready, summaryUnready))
	return &front{m: m, guard: guard, tokens: tokens, public: public}, nil
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := f.guard.Check(r); err != nil {
		f.refuse(w, r, http.StatusForbidden, err)
		return
	}
	if f.tokens.Len() > 0 {
		if _, err := f.tokens.Authorize(r); err != nil {
			if h, pattern := f.public.Handler(r); pattern != "" {
				h.ServeHTTP(w, r)
				return
			}
			w.Header().Set("WWW-Authenticate", bearer.Challenge)
			f.refuse(w, r, http.StatusUnauthorized, err)
			return
		}
	}
	f.m.mux.ServeHTTP(w, r)
}

// refuse answers status with err's text, which names the reason and never
// a token, and closes the connection.
func (f *front) refuse(w http.ResponseWriter, r *http.Request, status int, err error) {
	f.m.log.Debug("http request refused", "status", status, "method", r.Method, "path", r.URL.Path, "err", err)
	w.Header().Set("Connection", "close")
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, "manager: "+err.Error(), status)
}
