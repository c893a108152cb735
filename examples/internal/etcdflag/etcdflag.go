// Package etcdflag gives the examples one way to reach etcd: the flags
// -etcd ENDPOINTS, -etcd-cacert, -etcd-cert and -etcd-key (spelled as
// etcdctl spells them) select an existing cluster, with TLS when the files
// are given; without -etcd, Open starts an embedded member
// (store/etcdstore/etcdembed) for the example to use and stop.
package etcdflag

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/converge-go/converge/internal/privatefile"
	"github.com/converge-go/converge/store/etcdstore/etcdembed"
)

// ErrInvalid matches every error about flags that cannot be used: a
// certificate without its key, an unreadable or empty CA file.
var ErrInvalid = errors.New("etcdflag: invalid etcd flags")

// dialTimeout bounds a client's first connection.
const dialTimeout = 5 * time.Second

// Flags say where etcd is. The zero value means "start an embedded member".
type Flags struct {
	// Endpoints are the client URLs of an existing cluster, comma
	// separated ("" to start an embedded member).
	Endpoints string
	// CACert is a PEM file of the CAs that sign the servers' certificates;
	// Cert and Key a client certificate and its key (both or neither). A
	// Key others may read or change, or another user's, is refused
	// (internal/privatefile), unless InsecurePermissions.
	CACert, Cert, Key string
	// InsecurePermissions uses such a Key (-insecure-permissions).
	InsecurePermissions bool
}

// Register defines -etcd, -etcd-cacert, -etcd-cert and -etcd-key on fs and
// returns the Flags they fill in when fs is parsed.
func Register(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	fs.StringVar(&f.Endpoints, "etcd", "", "comma-separated client URLs of an existing etcd cluster (default: start an embedded member)")
	fs.StringVar(&f.CACert, "etcd-cacert", "", "verify the etcd servers' certificates with this CA bundle (PEM)")
	fs.StringVar(&f.Cert, "etcd-cert", "", "identify to etcd with this client certificate (PEM; with -etcd-key)")
	fs.StringVar(&f.Key, "etcd-key", "", "the key of -etcd-cert (PEM; yours, mode 0600)")
	fs.BoolVar(&f.InsecurePermissions, privatefile.AcceptFlag, false, "use an -etcd-key others may read or change, or another user's; without it such a key is refused")
	return f
}

// Args returns the command-line arguments that set f again, for a child
// process that registers the same flags.
func (f Flags) Args() []string {
	var args []string
	for _, a := range []struct{ name, value string }{
		{"-etcd", f.Endpoints}, {"-etcd-cacert", f.CACert}, {"-etcd-cert", f.Cert}, {"-etcd-key", f.Key},
	} {
		if a.value != "" {
			args = append(args, a.name+"="+a.value)
		}
	}
	if f.InsecurePermissions {
		args = append(args, "-"+privatefile.AcceptFlag)
	}
	return args
}

// endpoints splits Endpoints at commas, dropping empty parts.
func (f Flags) endpoints() []string {
	var eps []string
	for e := range strings.SplitSeq(f.Endpoints, ",") {
		if e = strings.TrimSpace(e); e != "" {
			eps = append(eps, e)
		}
	}
	return eps
}

// TLS returns the client TLS configuration the flags describe, or nil when
// none of the TLS flags is set (then Endpoints are dialled in plain text).
// It fails with ErrInvalid when a certificate comes without its key or
// the other way round, and when a file cannot be read or holds no
// certificate; with privatefile.ErrUnsafe for a Key others may read or
// change, or a CACert or Cert another user may change.
func (f Flags) TLS() (*tls.Config, error) {
	if f.CACert == "" && f.Cert == "" && f.Key == "" {
		return nil, nil
	}
	if (f.Cert == "") != (f.Key == "") {
		return nil, fmt.Errorf("%w: -etcd-cert and -etcd-key go together", ErrInvalid)
	}
	// Whoever may change the CAs passes for etcd; whoever may read the
	// key passes for this process.
	err := privatefile.CheckPlaces(nil, f.InsecurePermissions,
		privatefile.Place{Flag: "-etcd-cacert", Path: f.CACert, Check: privatefile.Trusted},
		privatefile.Place{Flag: "-etcd-cert", Path: f.Cert, Check: privatefile.Trusted},
		privatefile.Place{Flag: "-etcd-key", Path: f.Key, Check: privatefile.Secret})
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CACert != "" {
		pem, err := os.ReadFile(f.CACert)
		if err != nil {
			return nil, fmt.Errorf("%w: -etcd-cacert: %w", ErrInvalid, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: -etcd-cacert %s holds no PEM certificate", ErrInvalid, f.CACert)
		}
	}
	if f.Cert != "" {
		pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("%w: -etcd-cert/-etcd-key: %w", ErrInvalid, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// Etcd is the etcd an example uses: an existing cluster, or a member Open
// started.
type Etcd struct {
	flags  Flags
	tls    *tls.Config
	member *embed.Etcd // nil for an existing cluster
}

// Open returns the etcd the flags name. Without Endpoints it starts an
// embedded member with its data in dir and returns once it serves; with
// them it only checks the TLS flags (the cluster is dialled by Client).
// The caller calls Close after closing every client.
func Open(f Flags, dir string) (*Etcd, error) {
	cfg, err := f.TLS()
	if err != nil {
		return nil, err
	}
	if len(f.endpoints()) > 0 {
		return &Etcd{flags: f, tls: cfg}, nil
	}
	if cfg != nil {
		return nil, fmt.Errorf("%w: TLS flags without -etcd (the embedded member serves plain text)", ErrInvalid)
	}
	m, err := etcdembed.Start(dir)
	if err != nil {
		return nil, err
	}
	return &Etcd{flags: Flags{Endpoints: etcdembed.Endpoint(m)}, member: m}, nil
}

// Embedded reports whether Open started the member.
func (e *Etcd) Embedded() bool { return e.member != nil }

// Flags returns flags that reach this etcd from another process: the
// embedded member's endpoint, or the flags Open was given.
func (e *Etcd) Flags() Flags { return e.flags }

// Endpoints returns the client URLs.
func (e *Etcd) Endpoints() []string { return e.flags.endpoints() }

// Client returns a new client of the cluster, logging nothing; the caller
// closes it before Close.
func (e *Etcd) Client() (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   e.Endpoints(),
		TLS:         e.tls,
		DialTimeout: dialTimeout,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcdflag: client of %v: %w", e.Endpoints(), err)
	}
	return c, nil
}

// Close stops the embedded member, if Open started one.
func (e *Etcd) Close() {
	if e.member != nil {
		e.member.Close()
	}
}
