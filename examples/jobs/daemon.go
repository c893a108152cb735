package main

import (
	"context"
	"crypto/tls"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/converge-go/converge/reconcile/observe/convergeprom"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/converge-go/converge/internal/atomicfile"
	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/httpstore"
)

// DaemonConfig configures RunDaemon.
type DaemonConfig struct {
	// Dir holds the store (jobs.db, unless StoreServer), the attempts'
	// files (runs/), URLFile and HTTPFile, written once the daemon serves,
	// TokenFile, and LockFile on a store server.
	Dir string
	// Addr is the address to serve on ("127.0.0.1:0" picks a port;
	// HTTPFile says which).
	Addr string
	// Token is the bearer token the store API requires. If empty, the
	// daemon requires the one in Dir's TokenFile, generated (crypto/rand)
	// the first time, unless InsecureNoToken is set. A TokenFile that others
	// may read, or another user's, is refused: RunDaemon returns an error.
	Token string
	// InsecureNoToken serves the store without a token: every program that
	// reaches Addr may add jobs, and so run commands as this user. It is
	// logged as a warning; it and Token are exclusive.
	InsecureNoToken bool
	// InsecurePermissions uses a Dir another user may change (one of
	// another user than this process's and root, or writable by group or
	// others), with a warning; without it such a Dir is refused, since
	// whoever can change it can change the jobs, and so run commands as
	// this user (internal/privatefile). A missing Dir is made with mode 0700.
	InsecurePermissions bool
	// AllowedHosts are host names, besides IP literals and localhost, that
	// requests may name in their Host header (the machine's name, when
	// clients reach the daemon by it); any other is refused, so that no web
	// page can rebind its own name to the daemon.
	AllowedHosts []string
	// Workers is how many attempts run at once.
	Workers int
	// Grace is how long a stopped attempt gets between SIGTERM and SIGKILL,
	// and how long a shutdown waits for running attempts before stopping them.
	Grace time.Duration
	// BackoffBase and BackoffMax shape the delay between attempts: the
	// delay after failed attempt n is BackoffBase·2^(n-1), at most BackoffMax.
	BackoffBase, BackoffMax time.Duration
	// Executable is this program, run as the shim of every attempt.
	Executable string
	// Logger receives the daemon's logs (default: discarded). The token is
	// never logged.
	Logger *slog.Logger
	// StoreServer, if set, is the URL of a store served elsewhere with the
	// API-server layer (store/httpstore over store/apistore, as the
	// convergestore command serves it), which then holds the jobs instead
	// of the daemon's own bbolt file: the daemon serves no store, only its
	// debug page, metrics and probes. StoreToken is the bearer token it
	// requires ("" for none), and StoreTLS the client TLS configuration of
	// an https URL (nil: the system's roots). Run one daemon per store:
	// two would both run its jobs.
	StoreServer string
	StoreToken  string
	StoreTLS    *tls.Config
}

// URLFile is the file in the daemon's directory that holds the URL the
// daemon serves its store at. A daemon on a store server serves none, and
// removes the file.
const URLFile = "daemon.url"

// HTTPFile is the file in the daemon's directory that holds the base URL
// of its HTTP server (the debug page, the metrics, the probes).
const HTTPFile = "daemon.http"

// StorePath is where the store is mounted on the daemon's HTTP server.
const StorePath = "/store"

// DebugPath is where the daemon serves converge's debug page (HTML, or JSON
// with ?format=json), and MetricsPath its Prometheus metrics.
const (
	DebugPath   = "/debug/converge/"
	MetricsPath = "/metrics"
)

// RunDaemon runs the daemon until ctx ends: a controller running the jobs
// of a bbolt store with the API-server layer over it, which it serves over
// HTTP at StorePath, with the debug page, the metrics, /healthz and
// /readyz beside it; or, with StoreServer, the jobs of that store, and
// the rest. Everything it serves requires its token (see
// DaemonConfig.Token), except the bare status of the probes; a request
// naming another host, or a write from a web page, is refused whatever its
// token (reconcile/manager, store/httpstore). When ctx ends it stops
// taking work, gives running attempts Grace to finish, stops the others
// (each counts as a failed attempt) and returns once every attempt it
// started has been reaped.
func RunDaemon(ctx context.Context, cfg DaemonConfig) (err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := checkPlaces(cfg); err != nil {
		return err
	}
	runs := filepath.Join(cfg.Dir, "runs")
	if err := os.MkdirAll(runs, 0o700); err != nil {
		return err
	}
	s, served, closeStore, err := openStore(cfg)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeStore()) }()
	// After the store's lock: one daemon per directory makes the token.
	token, err := daemonToken(cfg)
	if err != nil {
		return err
	}

	l := newLauncher(cfg.Executable, runs, cfg.Grace)
	defer l.wait()
	c, reg, err := newController(s, l, cfg)
	if err != nil {
		return err
	}
	m, base, err := newServer(served, c, reg, token, cfg)
	if err != nil {
		return err
	}
	if token == "" {
		cfg.Logger.Warn("serving without a token (-insecure-no-token): every program that can reach the daemon can run commands as this user", "url", base)
	}
	if served != nil {
		cfg.Logger.Info("serving", "url", base+StorePath, "workers", cfg.Workers, "auth", authSource(cfg))
	} else {
		cfg.Logger.Info("running the jobs of a store server", "store", cfg.StoreServer, "url", base, "workers", cfg.Workers, "auth", authSource(cfg))
	}
	return m.Run(ctx)
}

// openStore returns the store of the jobs, the one to serve (nil: none)
// and what closes them: the bbolt file of cfg.Dir, with the API-server
// layer over it (admitting jobs by kinds.json), served as it is; or, with cfg.StoreServer, a client of
// that server (storeserver.go), served not at all.
func openStore(cfg DaemonConfig) (s, served store.Store[*Job], closeStore func() error, err error) {
	if cfg.StoreServer != "" {
		c, closeClient, err := storeServerClient(cfg)
		return c, nil, closeClient, err
	}
	opts, err := admission()
	if err != nil {
		return nil, nil, nil, err
	}
	db, err := boltstore.Open[*Job](filepath.Join(cfg.Dir, "jobs.db"), boltstore.WithLockTimeout(5*time.Second))
	if err != nil {
		return nil, nil, nil, err
	}
	layer, err := apistore.New(db, resource.Kind[Spec, Status]{}, opts...)
	if err != nil {
		return nil, nil, nil, errors.Join(err, db.Close())
	}
	return layer, layer, db.Close, nil
}

// authSource says, for the daemon's log, where its token comes from.
func authSource(cfg DaemonConfig) string {
	switch {
	case cfg.InsecureNoToken:
		return "none"
	case cfg.Token != "":
		return "the token given"
	}
	return "the token in " + filepath.Join(cfg.Dir, TokenFile)
}

// newController returns the jobs controller over s, its attempts started
// by l, and the Prometheus registry of its metrics.
func newController(s store.Store[*Job], l *launcher, cfg DaemonConfig) (*reconcile.Controller[*Job], *prometheus.Registry, error) {
	backoff := queue.NewExponential[string](cfg.BackoffBase, cfg.BackoffMax, 0)
	rec := &Reconciler{launcher: l, backoff: backoff, poll: 50 * time.Millisecond}
	opts := reconcile.Options[*Job]{
		Name:        "jobs",
		Prefix:      KeyPrefix,
		Workers:     cfg.Workers,
		RateLimiter: backoff,
		GracePeriod: cfg.Grace,
		StuckAfter:  24 * time.Hour, // a reconcile lasts as long as its attempt
		Logger:      cfg.Logger,
	}
	// Prometheus metrics under controller-runtime's names, on a registry
	// of the daemon's own (MetricsPath).
	reg := prometheus.NewRegistry()
	metrics, err := convergeprom.New(reg)
	if err != nil {
		return nil, nil, err
	}
	instrumented := convergeprom.Instrument(metrics, &opts)
	c, err := reconcile.New[*Job](s, rec, opts)
	if err != nil {
		return nil, nil, err
	}
	instrumented.Watch(c)
	rec.cached = c.Lister().Get
	return c, reg, nil
}

// newServer returns the manager running c and serving s (if not nil),
// the debug page and the metrics of reg, all behind token if set, and its
// base URL. It has written the URL of s to URLFile (or removed the file,
// for no s), then the base URL to HTTPFile.
func newServer(s store.Store[*Job], c *reconcile.Controller[*Job], reg *prometheus.Registry, token string, cfg DaemonConfig) (*manager.Manager, string, error) {
	var tokens []string
	if token != "" {
		tokens = []string{token}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, "", err
	}
	m, err := manager.New(manager.Options{
		Logger:          cfg.Logger,
		ShutdownTimeout: cfg.Grace + 30*time.Second,
		Server:          &manager.ServerOptions{Listener: ln, Tokens: tokens, AllowedHosts: cfg.AllowedHosts},
	})
	if err != nil {
		ln.Close()
		return nil, "", err
	}
	base := "http://" + ln.Addr().String()
	if err := errors.Join(
		serveStore(m, s, token, cfg),
		m.Handle(DebugPath, debugpage.New(debugpage.Options{IsLeader: m.IsLeader}, c)),
		m.Handle(MetricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})),
		m.Add(c),
	); err != nil {
		ln.Close()
		return nil, "", err
	}
	if err := writeURLs(cfg.Dir, base, s != nil); err != nil {
		ln.Close()
		return nil, "", err
	}
	return m, base, nil
}

// serveStore mounts s at StorePath on m, behind token if set; a nil s is
// not served.
func serveStore(m *manager.Manager, s store.Store[*Job], token string, cfg DaemonConfig) error {
	if s == nil {
		return nil
	}
	hopts := []httpstore.HandlerOption{httpstore.WithAllowedHosts(cfg.AllowedHosts...)}
	if token != "" {
		hopts = append(hopts, httpstore.WithReadWriteToken(token))
	}
	h, err := httpstore.NewHandler[*Job](s, hopts...)
	if err != nil {
		return err
	}
	return m.Handle(StorePath+"/", http.StripPrefix(StorePath, h))
}

// writeURLs writes URLFile (the store's URL, if the daemon serves it; else
// the file is removed, so that no client reaches a store that is not the
// daemon's) and then HTTPFile (the base URL), each whole: a reader sees
// the old content or the new, never a part.
func writeURLs(dir, base string, servesStore bool) error {
	urlFile := filepath.Join(dir, URLFile)
	if servesStore {
		if err := atomicfile.WriteFile(urlFile, []byte(base+StorePath+"\n"), 0o600); err != nil {
			return err
		}
	} else if err := os.Remove(urlFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, HTTPFile), []byte(base+"\n"), 0o600)
}
