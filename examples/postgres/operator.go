package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/reconcile/kit/drift"
	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/owners"
	"github.com/converge-go/converge/reconcile/kit/prune"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/reconcile/kit/schedule"
	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// Stores are the operator's stores: one per kind, and the raw objects for
// the owners' collector, all of one store with the API-server layer (a
// store server's clients, say).
type Stores struct {
	Roles     store.Store[*Role]
	Databases store.Store[*Database]
	Schedules store.Store[*BackupSchedule]
	Backups   store.Store[*Backup]
	Restores  store.Store[*Restore]
	Raw       store.Store[json.RawMessage]
}

// Config configures an Operator. Stores, PG, BinDir, BackupDir, IntentDir
// and Executable are required; the durations have working defaults.
type Config struct {
	Stores Stores
	PG     *pg
	// BinDir holds pg_dump and pg_restore; BackupDir receives the dumps.
	BinDir, BackupDir string
	// IntentDir holds the operator's own record of its CREATE DATABASEs
	// (reconcile/kit/external's Options.Creates): it
	// must be private to the operator's user, as no store token may
	// write there, and the same across restarts, or a database left
	// unmarked by a crash is never adopted (and so never dropped).
	IntentDir string
	// Executable is this program, run as each dump's process.
	Executable string
	// DumpEnv is the libpq environment of the dumps (it holds the
	// password, if any).
	DumpEnv []string
	// WALArchive, if set, is the WAL archive's directory, on the server's
	// host: the operator sets PostgreSQL's archive_command to copy into it
	// (archive_mode must be on) and takes base backups (MethodBase) beside
	// it. RestoreDir holds the drills' scratch clusters (RestoreDir/.drills)
	// and the Restores' clusters; ServerUser is the user they run as when
	// the operator runs as root (default postgres).
	WALArchive, RestoreDir, ServerUser string
	// Workers per controller (default 4).
	Workers int
	// DriftInterval is how often the catalog is polled for drift (default
	// 30s); PruneInterval how often the pruners pass (default 10m);
	// CheckInterval how often PostgreSQL's health is checked (default
	// dependency.DefaultInterval): it is down within 4 × CheckInterval of
	// failing, at once when a reconcile finds it unreachable.
	DriftInterval, PruneInterval, CheckInterval time.Duration
	// BackoffMax bounds the backoff of a failing key (default 30s).
	BackoffMax time.Duration
	// Logger receives the controllers' logs; DumpLogs the dumps' output
	// (default: discarded, and standard error).
	Logger   *slog.Logger
	DumpLogs io.Writer
	// Observe, if set, is told of every reconcile of every controller
	// once it has ended: its controller, key, start and error (a test's
	// count of the reconciles made while PostgreSQL was down).
	Observe func(controller, key string, started time.Time, err error)
}

// Operator is the PostgreSQL operator: a controller per kind, drift
// sources, two pruners and the owners' collector, to be run by a manager.
type Operator struct {
	Roles      *reconcile.Controller[*Role]
	Databases  *reconcile.Controller[*Database]
	Schedules  *reconcile.Controller[*BackupSchedule]
	Backups    *reconcile.Controller[*Backup]
	Restores   *reconcile.Controller[*Restore]
	collector  *owners.Collector[json.RawMessage]
	rolePruner *prune.Pruner[*Role]
	dbPruner   *prune.Pruner[*resource.Resource[DatabaseSpec, DatabaseStatus]]
	dumps      *dumpRunner
	// archive is the WAL archive's dependency (nil without one), for the
	// manager: its health is the process's.
	archive *dependency.Dependency
}

// NewOperator wires the operator of cfg.
func NewOperator(cfg Config) (*Operator, error) {
	cfg = withDefaults(cfg)
	if cfg.IntentDir == "" {
		return nil, fmt.Errorf("%w: postgres: the operator needs a directory for its record of creates (Config.IntentDir)", store.ErrInvalid)
	}
	o := &Operator{}
	mk := &marks{store: identifierOf(cfg.Stores.Roles)}
	// One PostgreSQL, one Dependency: every controller given it shares its
	// check and its state.
	deps := []*dependency.Dependency{{Name: DependencyName, Check: cfg.PG.ping, Interval: cfg.CheckInterval}}
	rw := &roleWorld{pg: cfg.PG, marks: mk}
	roles, err := external.New(cfg.Stores.Roles, rw.world(), onTheServer(roleOptions(), cfg, deps[0], rw.validate))
	if err != nil {
		return nil, err
	}
	dw := &dbWorld{pg: cfg.PG, marks: mk}
	databases, err := external.New(cfg.Stores.Databases, dw.world(), onTheServer(databaseOptions(cfg.IntentDir), cfg, deps[0], dw.validate))
	if err != nil {
		return nil, err
	}
	slots, err := schedule.NewSource(o.scheduleEntries, schedule.Options{Name: "backup schedules"})
	if err != nil {
		return nil, err
	}
	o.dumps = &dumpRunner{exe: cfg.Executable, bin: cfg.BinDir, dir: cfg.BackupDir, env: cfg.DumpEnv, logs: cfg.DumpLogs,
		archive: cfg.WALArchive, scratch: cfg.RestoreDir, user: cfg.ServerUser,
		logger: cfg.Logger, started: map[string]bool{}, told: map[string]bool{}, wake: func(key string) { _ = o.Backups.Enqueue(key) }}
	var archive *walArchive
	if cfg.WALArchive != "" {
		a, err := newWALArchive(cfg.WALArchive)
		if err != nil {
			return nil, err
		}
		archive = a
		if err := checkSafePath("the restore directory", cfg.RestoreDir); err != nil {
			return nil, err
		}
		o.archive = &dependency.Dependency{Name: ArchiveDependencyName, Check: a.check(cfg.PG), Interval: cfg.CheckInterval}
	}
	children := owners.Source(cfg.Stores.Backups, BackupPrefix, resource.Kind[BackupSpec, BackupStatus]{})
	var errs [5]error
	o.Roles, errs[0] = reconcile.New(cfg.Stores.Roles, observed[*Role](cfg, "roles", roles),
		controllerOptions[*Role](cfg, "roles", RolePrefix, roles.Dependencies(), roles.Sources()...))
	o.Databases, errs[1] = reconcile.New(cfg.Stores.Databases, observed[*Database](cfg, "databases", databases),
		controllerOptions[*Database](cfg, "databases", DatabasePrefix, databases.Dependencies(), databases.Sources()...))
	o.Schedules, errs[2] = reconcile.New(cfg.Stores.Schedules, observed[*BackupSchedule](cfg, "backupschedules", &scheduleReconciler{backups: cfg.Stores.Backups, archive: archive, dir: cfg.BackupDir}),
		controllerOptions[*BackupSchedule](cfg, "backupschedules", SchedulePrefix, nil, slots, children))
	o.Backups, errs[3] = reconcile.New(cfg.Stores.Backups, observed[*Backup](cfg, "backups", &backupReconciler{dumps: o.dumps, poll: time.Second, archive: archiveHealth(archive, cfg.PG)}),
		controllerOptions[*Backup](cfg, "backups", BackupPrefix, deps))
	restores := &restoreRunner{dumpRunner: o.dumps, dir: cfg.RestoreDir}
	restores.wake = func(key string) {
		if strings.HasPrefix(key, RestorePrefix) {
			_ = o.Restores.Enqueue(key)
		} else {
			_ = o.Backups.Enqueue(key)
		}
	}
	o.Restores, errs[4] = reconcile.New(cfg.Stores.Restores, observed[*Restore](cfg, "restores", &restoreReconciler{backups: cfg.Stores.Backups, runs: restores, poll: time.Second}),
		controllerOptions[*Restore](cfg, "restores", RestorePrefix, deps))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	if o.rolePruner, err = roles.Pruner(o.Roles); err != nil {
		return nil, err
	}
	if o.dbPruner, err = databases.Pruner(o.Databases); err != nil {
		return nil, err
	}
	return o, o.newHelpers(cfg)
}

// newHelpers makes the owners' collector.
func (o *Operator) newHelpers(cfg Config) error {
	var err error
	o.collector, err = owners.NewCollector(cfg.Stores.Raw, apistore.JSONKind{}, owners.CollectorOptions{Name: "backup owners", Logger: cfg.Logger})
	return err
}

// Add adds the operator's runnables to m.
func (o *Operator) Add(m *manager.Manager) error {
	return errors.Join(m.Add(o.Roles), m.Add(o.Databases), m.Add(o.Schedules), m.Add(o.Backups), m.Add(o.Restores),
		m.Add(o.collector), m.Add(o.rolePruner), m.Add(o.dbPruner))
}

// Controllers returns the operator's controllers, for the debug page.
func (o *Operator) Controllers() []debugpage.Controller {
	return []debugpage.Controller{o.Roles, o.Databases, o.Schedules, o.Backups, o.Restores}
}

// archiveHealth is a's check of its last archiving on p, or nil without
// an archive.
func archiveHealth(a *walArchive, p *pg) func(ctx context.Context) error {
	if a == nil {
		return nil
	}
	return func(ctx context.Context) error {
		c, err := p.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer c.Release()
		return a.failing(ctx, c.Conn())
	}
}

// Dependencies are the dependencies of the whole process: the WAL
// archive, if the operator keeps one.
func (o *Operator) Dependencies() []*dependency.Dependency {
	if o.archive == nil {
		return nil
	}
	return []*dependency.Dependency{o.archive}
}

// WaitDumps waits for the dumps this process started to end; they outlive
// the operator otherwise, and the next one adopts them.
func (o *Operator) WaitDumps() { o.dumps.wait() }

// scheduleEntries lists the schedules for the slot source, from the
// schedule controller's cache.
func (o *Operator) scheduleEntries(context.Context) ([]schedule.Entry, error) {
	var out []schedule.Entry
	for _, obj := range o.Schedules.Lister().List() {
		if s, _, err := parseSchedule(obj.Key, obj.Value.Spec); err == nil {
			out = append(out, schedule.Entry{Key: obj.Key, Schedule: s})
		}
	}
	return out, nil
}

func withDefaults(cfg Config) Config {
	cfg.Workers = cmp.Or(cfg.Workers, 4)
	cfg.DriftInterval = cmp.Or(cfg.DriftInterval, 30*time.Second)
	cfg.PruneInterval = cmp.Or(cfg.PruneInterval, prune.DefaultInterval)
	cfg.CheckInterval = cmp.Or(cfg.CheckInterval, dependency.DefaultInterval)
	cfg.BackoffMax = cmp.Or(cfg.BackoffMax, 30*time.Second)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.DumpLogs == nil {
		cfg.DumpLogs = os.Stderr
	}
	return cfg
}

// onTheServer completes the kit's options of a kind kept in PostgreSQL
// with what the operator's kinds share: the server as their one
// dependency, the logger, the drift and prune intervals, and the kind's
// Validate.
func onTheServer[Spec, Status any](o external.Options[Spec, Status], cfg Config, dep *dependency.Dependency,
	validate func(context.Context, string, Spec) error,
) external.Options[Spec, Status] {
	o.Dependency, o.Logger, o.Validate = dep, cfg.Logger, validate
	o.Drift = drift.Options{Interval: cfg.DriftInterval, PerSecond: 50}
	o.Prune = prune.Options{Interval: cfg.PruneInterval, Logger: cfg.Logger}
	return o
}

// identifierOf returns s as a store.Identifier; a store without an
// identity fails the operator's marks (and prune.New refuses it).
func identifierOf[T any](s store.Store[T]) store.Identifier {
	if id, ok := s.(store.Identifier); ok {
		return id
	}
	return noIdentity{}
}

type noIdentity struct{}

func (noIdentity) Identity(context.Context) (string, error) {
	return "", errors.New("postgres: the store has no identity")
}

// observed wraps rec with cfg.Observe, if set.
func observed[T any](cfg Config, name string, rec reconcile.Reconciler[T]) reconcile.Reconciler[T] {
	if cfg.Observe == nil {
		return rec
	}
	return reconcile.ReconcilerFunc[T](func(ctx context.Context, req reconcile.Request[T]) (reconcile.Result, error) {
		started := time.Now()
		res, err := rec.Reconcile(ctx, req)
		cfg.Observe(name, req.Key, started, err)
		return res, err
	})
}

// controllerOptions are the options of the controller name of the keys
// under prefix. deps are its dependencies (PostgreSQL, for the kinds that
// act on it): while one is down the controller is unready, holds its keys,
// and retries them at once when it is back.
func controllerOptions[T any](cfg Config, name, prefix string, deps []*dependency.Dependency, sources ...reconcile.Source) reconcile.Options[T] {
	return reconcile.Options[T]{Name: name, Prefix: prefix, Workers: cfg.Workers, Logger: cfg.Logger,
		RateLimiter:  queue.NewExponential[string](100*time.Millisecond, cfg.BackoffMax, 0.1),
		Timeout:      2 * time.Minute,
		Sources:      sources,
		Dependencies: deps,
	}
}
