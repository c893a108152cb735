package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/postgres/internal/cluster"
	"github.com/converge-go/converge/internal/atomicfile"
	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
	"github.com/converge-go/converge/store/httpstore"
)

// DaemonConfig configures RunDaemon.
type DaemonConfig struct {
	// StoreServer is the URL of the store, served with the API-server
	// layer (convergestore, or the demo's server); StoreToken its bearer
	// token ("" for none).
	StoreServer, StoreToken string
	// DSN is PostgreSQL's connection string; Password, if set, its
	// password (else the DSN's, $PGPASSWORD or ~/.pgpass, as libpq finds
	// it). Neither is ever logged.
	DSN, Password string
	// Dir holds the dumps (Dir/backups), the record of CREATE DATABASEs
	// (Dir/creating) and the file URLFile.
	Dir string
	// Addr is the address of the HTTP server: /healthz, /readyz and the
	// debug page ("127.0.0.1:0" picks a port; URLFile says which). It
	// must be a loopback address unless InsecureNoToken is set: the debug
	// page has no token.
	Addr string
	// InsecureNoToken accepts an Addr that is not loopback, where whoever
	// reaches it reads the debug page.
	InsecureNoToken bool
	// WALArchive, RestoreDir and ServerUser are Config's; with an
	// archive, RestoreDir is made (mode 0700, the server user's when
	// root) if missing.
	WALArchive, RestoreDir, ServerUser string
	// BinDir holds pg_dump and pg_restore; Executable is this program.
	BinDir, Executable string
	// Operator's intervals, workers and backoff (see Config).
	DriftInterval, PruneInterval, CheckInterval, BackoffMax time.Duration
	Workers                                                 int
	Logger                                                  *slog.Logger
	// Observe is Config.Observe.
	Observe func(controller, key string, started time.Time, err error)
}

// URLFile is the file in the daemon's directory that holds the base URL of
// its HTTP server, written once it serves.
const URLFile = "operator.url"

// DebugPath is where the daemon serves converge's debug page.
const DebugPath = "/debug/converge/"

// RunDaemon runs the operator until ctx ends: its controllers on the store
// server's objects, PostgreSQL checked as their dependency, and an HTTP
// server with the probes and the debug page, which name PostgreSQL while
// it is down. Its server only reads, without a token: an Addr that is
// not loopback is refused (an error matching demo.ErrNotLoopback) unless
// cfg.InsecureNoToken is set, since the debug page shows keys and errors.
func RunDaemon(ctx context.Context, cfg DaemonConfig) error {
	d, err := newDaemon(cfg)
	if err != nil {
		return err
	}
	return d.run(ctx)
}

// daemon is the operator, its manager and what they hold.
type daemon struct {
	op    *Operator
	m     *manager.Manager
	base  string // the HTTP server's base URL
	close func() // closes the pool and the stores
	log   *slog.Logger
}

// newDaemon wires the daemon of cfg; run runs it.
func newDaemon(cfg DaemonConfig) (_ *daemon, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := demo.CheckLoopback(cfg.Addr, "-addr", "-insecure-no-token", cfg.InsecureNoToken); err != nil {
		return nil, err
	}
	if cfg.InsecureNoToken {
		cfg.Logger.Warn("serving the debug page without a token (-insecure-no-token): whoever reaches the address reads it", "addr", cfg.Addr)
	}
	stores, closeStores, err := dialStores(cfg.StoreServer, cfg.StoreToken)
	if err != nil {
		return nil, err
	}
	p, err := openPG(cfg.DSN, cfg.Password)
	if err != nil {
		closeStores()
		return nil, err
	}
	d := &daemon{close: func() { p.Close(); closeStores() }, log: cfg.Logger}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	d.op, err = NewOperator(Config{Stores: stores, PG: p, BinDir: cfg.BinDir, BackupDir: filepath.Join(cfg.Dir, "backups"),
		IntentDir: filepath.Join(cfg.Dir, "creating"), Executable: cfg.Executable, DumpEnv: dumpEnv(p.pool.Config()), Workers: cfg.Workers, Logger: cfg.Logger,
		DriftInterval: cfg.DriftInterval, PruneInterval: cfg.PruneInterval, CheckInterval: cfg.CheckInterval, BackoffMax: cfg.BackoffMax,
		WALArchive: cfg.WALArchive, RestoreDir: cfg.RestoreDir, ServerUser: cfg.ServerUser, Observe: cfg.Observe})
	if err != nil {
		return nil, err
	}
	if cfg.WALArchive != "" { // drills and Restores need the archive
		if err := makeRestoreDir(cfg.RestoreDir, cfg.ServerUser); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	d.m, err = manager.New(manager.Options{Logger: cfg.Logger, ShutdownTimeout: time.Minute, Server: &manager.ServerOptions{Listener: ln},
		Dependencies: d.op.Dependencies()})
	if err != nil {
		ln.Close()
		return nil, err
	}
	d.base = "http://" + ln.Addr().String()
	if err := errors.Join(
		d.m.Handle(DebugPath, debugpage.New(debugpage.Options{IsLeader: d.m.IsLeader}, d.op.Controllers()...)),
		d.m.Handle(BackupsPath, d.op.backupsHandler()),
		d.op.Add(d.m),
		atomicfile.WriteFile(filepath.Join(cfg.Dir, URLFile), []byte(d.base+"\n"), 0o600),
	); err != nil {
		ln.Close()
		return nil, err
	}
	cfg.Logger.Info("operator running", "store", cfg.StoreServer, "postgres", redacted(p.pool.Config()), "http", d.base)
	return d, nil
}

// run runs the daemon until ctx ends, then waits for the dumps it started
// and closes what it holds.
func (d *daemon) run(ctx context.Context) error {
	defer d.close()
	err := d.m.Run(ctx)
	d.op.WaitDumps()
	return err
}

// makeRestoreDir makes dir, if set, mode 0700, owned by the user the
// restored clusters run as when this process is root.
func makeRestoreDir(dir, user string) error {
	if dir == "" {
		return nil
	}
	if err := checkSafePath("-restore-dir", dir); err != nil {
		return err
	}
	cred, err := cluster.Credential(user)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, ".drills"), 0o700); err != nil {
		return err
	}
	return errors.Join(chown(dir, cred), chown(filepath.Join(dir, ".drills"), cred))
}

// openPG opens the pool of dsn, with password if set.
func openPG(dsn, password string) (*pg, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors never quote the password.
		return nil, fmt.Errorf("postgres: -pg: %w", err)
	}
	if password != "" {
		cfg.ConnConfig.Password = password
	}
	return newPG(cfg)
}

// dumpEnv is the libpq environment that connects pg_dump where the pool
// connects; it holds the password.
func dumpEnv(cfg *pgxpool.Config) []string {
	c := cfg.ConnConfig
	env := []string{"PGHOST=" + c.Host, "PGPORT=" + strconv.Itoa(int(c.Port)), "PGUSER=" + c.User, "PGDATABASE=" + c.Database}
	if c.Password != "" {
		env = append(env, "PGPASSWORD="+c.Password)
	}
	if c.TLSConfig == nil {
		env = append(env, "PGSSLMODE=disable")
	}
	return env
}

// redacted shows where the pool connects, without its password.
func redacted(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	return fmt.Sprintf("%s@%s/%s", c.User, net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))), c.Database)
}

// dialStores returns the operator's stores, clients of the store served at
// url, and what closes them.
func dialStores(url, token string) (Stores, func() error, error) {
	var opts []httpstore.ClientOption
	if token != "" {
		opts = append(opts, httpstore.WithToken(token))
	}
	roles, err1 := httpstore.New[*Role](url, opts...)
	dbs, err2 := httpstore.New[*Database](url, opts...)
	schedules, err3 := httpstore.New[*BackupSchedule](url, opts...)
	backups, err4 := httpstore.New[*Backup](url, opts...)
	raw, err5 := httpstore.New[json.RawMessage](url, opts...)
	restores, err6 := httpstore.New[*Restore](url, opts...)
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return Stores{}, nil, fmt.Errorf("postgres: -store-server: %w", err)
	}
	closeAll := func() error {
		return errors.Join(roles.Close(), dbs.Close(), schedules.Close(), backups.Close(), raw.Close(), restores.Close())
	}
	return Stores{Roles: roles, Databases: dbs, Schedules: schedules, Backups: backups, Restores: restores, Raw: raw}, closeAll, nil
}
