package main

import (
	"cmp"
	"errors"
	"flag"
	"io"
	"net/url"
	"os"
	"sync/atomic"
	"time"

	"github.com/converge-go/converge/internal/privatefile"
	"github.com/converge-go/converge/store"
)

// globalFlags are the flags before the command: how to reach the server,
// and the bounds of what convergectl reads and waits for.
type globalFlags struct {
	server, token, tokenFile  string
	caFile, certFile, keyFile string
	timeout                   time.Duration
	maxValueSize              int64
	// insecurePermissions uses a -key others may read, with a warning on
	// warnings (internal/privatefile).
	insecurePermissions bool
	warnings            io.Writer

	// certRequested records that a server asked for a client certificate
	// that convergectl had none to give (see explain).
	certRequested atomic.Bool
}

// register declares the flags on fs. No default is read from the
// environment here: the usage prints defaults, and a token must never be
// printed; resolve reads $CONVERGE_SERVER and $CONVERGE_TOKEN after parsing.
func (f *globalFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.server, "server", "", "the store's `URL`, with the path it is served at, such as http://127.0.0.1:7007/store (default $CONVERGE_SERVER; one of them is required)")
	fs.StringVar(&f.token, "token", "", "bearer `token` (default $CONVERGE_TOKEN; never printed)")
	fs.StringVar(&f.tokenFile, "token-file", "", "read the bearer token from this `file` (yours, mode 0600, not a link; instead of -token and $CONVERGE_TOKEN)")
	fs.StringVar(&f.caFile, "cacert", "", "PEM `file` of the certificates that verify an https server (default: the system's)")
	fs.StringVar(&f.certFile, "cert", "", "PEM `file` of a client certificate (with -key)")
	fs.StringVar(&f.keyFile, "key", "", "PEM `file` of the client certificate's key (with -cert)")
	fs.BoolVar(&f.insecurePermissions, privatefile.AcceptFlag, false, "use a -key file others may read or change, or another user's, with a warning; without it such a key is refused")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "bound on each request, 0 for none (watch is bounded only by an interrupt)")
	fs.Int64Var(&f.maxValueSize, "max-value-size", store.DefaultMaxValueSize, "the largest value put, apply and status read, in `bytes`: the server's default limit; raise it for a server configured with a larger one")
}

// check reports the flags that contradict each other or are out of range,
// as usage errors.
func (f *globalFlags) check() error {
	switch {
	case f.timeout < 0:
		return usagef("-timeout %v: want 0 (no bound) or more", f.timeout)
	case f.maxValueSize < 1:
		return usagef("-max-value-size %d: want 1 or more", f.maxValueSize)
	case f.token != "" && f.tokenFile != "":
		return usagef("-token and -token-file together: give one")
	case (f.certFile == "") != (f.keyFile == ""):
		return usagef("-cert and -key go together")
	}
	return nil
}

// errNoServer: neither -server nor $CONVERGE_SERVER names the server.
var errNoServer = usagef("no server: give -server URL (such as -server http://127.0.0.1:7007/store) or set $CONVERGE_SERVER")

// wantURL says how a server is named.
const wantURL = "want http:// or https://HOST[:PORT][/PATH], such as http://127.0.0.1:7007/store"

// serverURL returns the URL of the server: -server, else $CONVERGE_SERVER.
// A missing or malformed URL is a usage error; the message never repeats a
// password the URL holds.
func (f *globalFlags) serverURL() (string, error) {
	raw := cmp.Or(f.server, os.Getenv("CONVERGE_SERVER"))
	if raw == "" {
		return "", errNoServer
	}
	u, err := url.Parse(raw)
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return "", usagef("-server: %v: %s", ue.Err, wantURL)
	}
	switch {
	case err != nil:
		return "", usagef("-server: %s", wantURL)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return "", usagef("-server %s: %s", u.Redacted(), wantURL)
	case u.User != nil:
		return "", usagef("-server %s: a URL with a user or password; give the token with -token-file or $CONVERGE_TOKEN", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "":
		return "", usagef("-server: a URL with a query or fragment: %s", wantURL)
	}
	return raw, nil
}
