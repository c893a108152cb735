package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/converge-go/converge/reconcile/debugpage"
	convergeprom "github.com/converge-go/converge/reconcile/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/httpstore"
)

// DaemonConfig configures RunDaemon.
type DaemonConfig struct {
	// Dir holds the store (jobs.db), the attempts' files (runs/) and the
	// file daemon.url, written once the daemon serves.
	Dir string
	// Addr is the address to serve the store on ("127.0.0.1:0" picks a port;
	// daemon.url says which).
	Addr string
	// Token, if set, is required (as a bearer token) by the store API.
	Token string
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
	Logger     *slog.Logger
}

// URLFile is the file in the daemon's directory that holds the URL the
// store is served at.
const URLFile = "daemon.url"

// StorePath is where the store is mounted on the daemon's HTTP server.
const StorePath = "/store"

// DebugPath is where the daemon serves converge's debug page (HTML, or JSON
// with ?format=json), and MetricsPath its Prometheus metrics.
const (
	DebugPath   = "/debug/converge/"
	MetricsPath = "/metrics"
)

// RunDaemon runs the daemon until ctx ends: a controller running the jobs
// of a bbolt store, which it serves over HTTP at StorePath (with /healthz
// and /readyz beside it). When ctx ends it stops taking work, gives running
// attempts Grace to finish, stops the others (each counts as a failed
// attempt) and returns once every attempt it started has been reaped.
func RunDaemon(ctx context.Context, cfg DaemonConfig) (err error) {
	runs := filepath.Join(cfg.Dir, "runs")
	if err := os.MkdirAll(runs, 0o700); err != nil {
		return err
	}
	s, err := boltstore.Open[*Job](filepath.Join(cfg.Dir, "jobs.db"), boltstore.WithLockTimeout(5*time.Second))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()

	backoff := queue.NewExponential[string](cfg.BackoffBase, cfg.BackoffMax, 0)
	l := newLauncher(cfg.Executable, runs, cfg.Grace)
	defer l.wait()
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
		return err
	}
	instrumented := convergeprom.Instrument(metrics, &opts)
	c, err := reconcile.New[*Job](s, rec, opts)
	if err != nil {
		return err
	}
	instrumented.Watch(c)
	rec.cached = c.Lister().Get

	var hopts []httpstore.HandlerOption
	if cfg.Token != "" {
		hopts = append(hopts, httpstore.WithReadWriteToken(cfg.Token))
	}
	h, err := httpstore.NewHandler[*Job](s, hopts...)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	m, err := manager.New(manager.Options{
		Logger:          cfg.Logger,
		ShutdownTimeout: cfg.Grace + 30*time.Second,
		Server:          &manager.ServerOptions{Listener: ln},
	})
	if err != nil {
		ln.Close()
		return err
	}
	if err := errors.Join(
		m.Handle(StorePath+"/", http.StripPrefix(StorePath, h)),
		m.Handle(DebugPath, debugpage.New(debugpage.Options{IsLeader: m.IsLeader}, c)),
		m.Handle(MetricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})),
		m.Add(c),
	); err != nil {
		ln.Close()
		return err
	}
	url := fmt.Sprintf("http://%s%s", ln.Addr(), StorePath)
	if err := writeFileAtomic(filepath.Join(cfg.Dir, URLFile), []byte(url+"\n")); err != nil {
		ln.Close()
		return err
	}
	cfg.Logger.Info("serving", "url", url, "workers", cfg.Workers)
	return m.Run(ctx)
}

// writeFileAtomic replaces path with b: readers see the old or the new
// content, never a part.
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := writeSynced(tmp, b, os.O_TRUNC); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

var _ store.Store[*Job] = (*boltstore.Store[*Job])(nil)
