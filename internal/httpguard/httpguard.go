// Package httpguard refuses the requests a web browser could be made to send
// to a server on this machine by a page that did not come from it: the
// one rule behind every converge endpoint's defence against cross-site
// request forgery and DNS rebinding. The store handler (store/httpstore) and
// the manager's server (reconcile/manager) both apply it; their options
// expose Policy.
//
// A Guard checks three things:
//
//   - Host: the request must name this server by a name it was told to
//     answer to. IP literals, "localhost" and names under ".localhost" are
//     always accepted (no page can rebind them); any other name only if
//     listed in Policy.Hosts ("*" accepts every name). This stops DNS
//     rebinding, where a page's own host name is made to resolve to
//     127.0.0.1 so that the browser treats the server as same-origin.
//   - Origin: a state-changing request (any method but GET, HEAD and
//     OPTIONS) coming from another origin is refused, whatever its
//     credentials, unless that origin is listed in Policy.Origins. It is
//     told by the Sec-Fetch-Site and Origin headers, as
//     http.CrossOriginProtection tells it; a page opened from a file
//     (Origin "null") is another origin.
//   - Content type (RequireJSON, for handlers whose writes carry JSON):
//     a state-changing request must say Content-Type: application/json,
//     which a page can send to another origin only after a CORS preflight
//     that converge never answers, so a "simple" cross-origin request
//     (text/plain, a form) never reaches the handler.
//
// Requests without these headers (curl, Go clients, other programs) pass
// the origin check: it protects browsers' users, not the network. Tokens
// and TLS do that.
package httpguard

import (
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"strings"
)

// Errors a Guard returns, to be answered with 403 (ErrHost, ErrCrossOrigin)
// or 415 (ErrContentType). Callers wrap them in their own package's errors.
var (
	ErrHost        = errors.New("the Host header names a host this server does not answer to")
	ErrCrossOrigin = errors.New("a state-changing request from another origin (a web page) is refused")
	ErrContentType = errors.New("a state-changing request must have Content-Type: application/json")
)

// Policy names what a Guard accepts beyond its defaults. The zero Policy
// accepts loopback names and IP literals as hosts and no other origin.
type Policy struct {
	// Hosts are further host names (without port) the server answers to,
	// such as the machine's DNS name when it listens beyond loopback. "*"
	// accepts every name, giving up the defence against DNS rebinding.
	Hosts []string
	// Origins are further origins ("https://console.example:8443") whose
	// pages may make state-changing requests.
	Origins []string
}

// Guard applies a Policy. Make one with New; it is safe for concurrent use.
type Guard struct {
	hosts   map[string]bool
	anyHost bool
	origins *http.CrossOriginProtection
}

// New returns a Guard for p, or an error for a malformed host or origin.
func New(p Policy) (*Guard, error) {
	g := &Guard{hosts: make(map[string]bool), origins: http.NewCrossOriginProtection()}
	for _, h := range p.Hosts {
		if h == "*" {
			g.anyHost = true
			continue
		}
		name := normalHost(h)
		if name == "" || strings.ContainsAny(name, "/:@ ") {
			return nil, fmt.Errorf("host %q: want a bare host name, without scheme or port", h)
		}
		g.hosts[name] = true
	}
	for _, o := range p.Origins {
		if err := g.origins.AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("origin %q: %w", o, err)
		}
	}
	return g, nil
}

// Check returns nil if r may be served: its Host is one the server answers
// to and, if it changes state, it does not come from another origin's page.
// It returns an error matching ErrHost or ErrCrossOrigin otherwise.
func (g *Guard) Check(r *http.Request) error {
	if !g.hostAllowed(r.Host) {
		return fmt.Errorf("%w: %q", ErrHost, r.Host)
	}
	if err := g.origins.Check(r); err != nil {
		origin := r.Header.Get("Origin")
		if origin == "" {
			origin = "Sec-Fetch-Site: " + r.Header.Get("Sec-Fetch-Site")
		}
		return fmt.Errorf("%w (%s)", ErrCrossOrigin, origin)
	}
	return nil
}

// Safe reports whether method is one that must change nothing (GET, HEAD,
// OPTIONS), which the origin and content-type checks let through.
func Safe(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// RequireJSON returns nil if r is a safe request or says Content-Type:
// application/json (parameters such as charset allowed), else an error
// matching ErrContentType.
func RequireJSON(r *http.Request) error {
	if Safe(r.Method) {
		return nil
	}
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return fmt.Errorf("%w, not %q", ErrContentType, ct)
	}
	return nil
}

// Handler returns h behind g: a refused request is answered by refuse
// (which writes the answer) and never reaches h.
func (g *Guard) Handler(h http.Handler, refuse func(w http.ResponseWriter, r *http.Request, err error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := g.Check(r); err != nil {
			refuse(w, r, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether the Host header hostport names this server.
// An absent Host (HTTP/1.0, which no browser sends) is accepted.
func (g *Guard) hostAllowed(hostport string) bool {
	if hostport == "" || g.anyHost {
		return true
	}
	name := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		name = h
	}
	name = normalHost(name)
	if ip := net.ParseIP(strings.SplitN(name, "%", 2)[0]); ip != nil {
		return true // no page can make a name resolve to a literal
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true // resolved to loopback by every browser (RFC 6761)
	}
	return g.hosts[name]
}

// normalHost lowercases a host name and drops IPv6 brackets and a final
// dot, so that "LOCALHOST." and "localhost" are one name.
func normalHost(h string) string {
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.TrimSuffix(strings.ToLower(h), ".")
}
