package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/internal/procs"
	"github.com/converge-go/converge/examples/postgres/internal/cluster"
	"github.com/converge-go/converge/internal/syncbuf"
)

// testMainEnv makes the test binary run this program's main instead of
// the tests: the operators and the dumps the tests start are copies of
// the test binary.
const testMainEnv = "POSTGRES_TEST_MAIN"

func TestMain(m *testing.M) {
	// A dump started by an operator in the test's process is the test
	// binary too, without testMainEnv.
	if os.Getenv(testMainEnv) == "1" || len(os.Args) > 1 && (os.Args[1] == dumpCommand || os.Args[1] == restoreCommand) {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// pgEnv is one test's world: a private PostgreSQL server, a store server,
// and clients of the store.
type pgEnv struct {
	t      *testing.T
	pg     *cluster.Cluster
	store  *storeServer
	stores Stores
	dir    string
	exe    string
	// archive and restores are the WAL archive and the restore directory,
	// in the cluster's directory (its user's), set by newArchivedPGEnv.
	archive, restores string
}

// newPGEnv starts a private PostgreSQL and a store server, both stopped
// when the test ends; it skips the test, saying why, where PostgreSQL
// cannot run.
func newPGEnv(t *testing.T) *pgEnv {
	return newPGEnvWith(t, cluster.Options{})
}

// newArchivedPGEnv is newPGEnv with PostgreSQL's archive_mode on, and a
// WAL archive and a restore directory for its operators.
func newArchivedPGEnv(t *testing.T) *pgEnv {
	t.Helper()
	return withArchive(t, newPGEnvWith(t, cluster.Options{Settings: []string{"archive_mode=on"}}))
}

// withArchive gives e a WAL archive and a restore directory, in its
// cluster's directory.
func withArchive(t *testing.T, e *pgEnv) *pgEnv {
	t.Helper()
	e.archive, e.restores = filepath.Join(e.pg.Dir(), "archive"), filepath.Join(e.pg.Dir(), "restores")
	cred, err := cluster.Credential("")
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(e.archive, 0o700))
	require.NoError(t, chown(e.archive, cred))
	t.Cleanup(func() { // the clusters Restores left running outlive the operator
		left, _ := filepath.Glob(filepath.Join(e.restores, "*", "data"))
		for _, data := range left {
			require.NoError(t, stopServer(data, syscall.SIGQUIT))
		}
	})
	return e
}

func newPGEnvWith(t *testing.T, opts cluster.Options) *pgEnv {
	t.Helper()
	c, err := cluster.Start(t.Context(), opts)
	if errors.Is(err, cluster.ErrNotInstalled) || errors.Is(err, cluster.ErrNoUser) {
		t.Skipf("skipping: no PostgreSQL to test against: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(c.LogFile()); err == nil {
				t.Logf("postgres log (tail):\n%s", tail(string(b), 60))
			}
		}
		require.NoError(t, c.Remove())
	})
	exe, err := os.Executable()
	require.NoError(t, err)
	e := &pgEnv{t: t, pg: c, dir: t.TempDir(), exe: exe}
	e.useNewStore()
	return e
}

// useNewStore starts a new store server (a fresh store, of its own
// identity) and points the env's clients at it.
func (e *pgEnv) useNewStore() {
	s, err := startStoreServer(e.t.TempDir())
	require.NoError(e.t, err)
	e.t.Cleanup(func() { s.Close() })
	stores, closeStores, err := s.stores()
	require.NoError(e.t, err)
	e.t.Cleanup(func() { closeStores() })
	e.store, e.stores = s, stores
}

// daemonConfig is a daemon of the env, with the fast intervals of tests.
func (e *pgEnv) daemonConfig() DaemonConfig {
	return DaemonConfig{StoreServer: e.store.URL, StoreToken: e.store.token, DSN: e.pg.DSN("postgres"), Dir: e.dir,
		Addr: "127.0.0.1:0", BinDir: e.pg.BinDir(), Executable: e.exe, DriftInterval: time.Second,
		PruneInterval: time.Hour, CheckInterval: 500 * time.Millisecond, BackoffMax: 2 * time.Second, Workers: 4,
		WALArchive: e.archive, RestoreDir: e.restores}
}

// inProcess is an operator run in the test's process.
type inProcess struct {
	*daemon
	logs *syncbuf.Buffer
	stop func()
}

// startInProcess runs an operator of cfg in this process until the test
// ends or stop is called, and returns once it is ready.
func (e *pgEnv) startInProcess(cfg DaemonConfig) *inProcess {
	e.t.Helper()
	logs := &syncbuf.Buffer{}
	cfg.Logger = testLogger(logs)
	d, err := newDaemon(cfg)
	require.NoError(e.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.run(ctx) }()
	p := &inProcess{daemon: d, logs: logs}
	var once bool
	p.stop = func() {
		if once {
			return
		}
		once = true
		cancel()
		require.NoError(e.t, <-done)
	}
	e.t.Cleanup(func() {
		p.stop()
		if e.t.Failed() {
			e.t.Logf("operator logs (tail):\n%s", tail(logs.String(), 80))
		}
	})
	e.waitReady(d.base)
	return p
}

// startProcess starts "postgres operator" (the test binary) with the
// env's store and PostgreSQL, the token and password in files, and
// returns once it is ready. The test's cleanup kills it if it still runs.
// Its logs, and its dumps', go to a file (operatorLogs reads it): a pipe
// would make the wait for a killed operator wait for the dumps that
// outlive it too.
func (e *pgEnv) startProcess(extra ...string) *operatorProc {
	e.t.Helper()
	logs, err := os.OpenFile(filepath.Join(e.dir, "operator.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	require.NoError(e.t, err)
	defer logs.Close()
	p, err := startOperatorProc(e.t.Context(), e.exe, []string{testMainEnv + "=1"}, e.dir, logs, time.Minute, e.operatorArgs(extra...)...)
	require.NoError(e.t, err)
	e.t.Cleanup(p.Kill)
	e.t.Cleanup(func() {
		if e.t.Failed() {
			e.t.Logf("operator process logs (tail):\n%s", tail(e.operatorLogs(), 100))
		}
	})
	return p
}

// operatorLogs returns what the env's operator processes logged.
func (e *pgEnv) operatorLogs() string {
	b, _ := os.ReadFile(filepath.Join(e.dir, "operator.log"))
	return string(b)
}

// operatorArgs are the flags of an operator process of the env, with the
// fast intervals of tests, then extra.
func (e *pgEnv) operatorArgs(extra ...string) []string {
	cfg := e.daemonConfig()
	tokenFile, pwFile := filepath.Join(e.dir, "store-token"), filepath.Join(e.dir, "pg-password")
	require.NoError(e.t, os.WriteFile(tokenFile, []byte(e.store.token+"\n"), 0o600))
	require.NoError(e.t, os.WriteFile(pwFile, []byte(e.pg.Password()+"\n"), 0o600))
	return append([]string{"-store-server", cfg.StoreServer, "-store-token-file", tokenFile,
		"-pg", e.pg.DSNWithoutPassword("postgres"), "-pg-password-file", pwFile, "-pg-bin", cfg.BinDir,
		"-drift-interval", "1s", "-prune-interval", "1h", "-check-interval", "500ms", "-backoff-max", "2s", "-v"}, e.archiveArgs(extra)...)
}

// archiveArgs are extra with the env's archive and restore directory, if
// it has them.
func (e *pgEnv) archiveArgs(extra []string) []string {
	if e.archive == "" {
		return extra
	}
	return append([]string{"-wal-archive", e.archive, "-restore-dir", e.restores}, extra...)
}

// waitReady waits until base's /readyz answers 200.
func (e *pgEnv) waitReady(base string) {
	e.t.Helper()
	waitFor(e.t, "the operator ready at "+base, time.Minute, func() bool {
		return procs.Probe(e.t.Context(), base+"/readyz") == http.StatusOK
	})
}

// waitFor checks cond every 50ms until it holds, failing t after limit:
// for what no store watch announces (PostgreSQL's catalog and settings,
// files, processes, the operator's endpoints and its in-process state).
// What the store holds is waited for with externaltest's waits, driven by
// its watch.
func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	if err := until(t.Context(), limit, "waiting for "+what, func() (bool, error) { return cond(), nil }); err != nil {
		t.Fatal(err)
	}
}

// query runs sql with psql in db and returns its output, trimmed.
func (e *pgEnv) query(db, sql string) string {
	e.t.Helper()
	out, err := e.pg.Psql(e.t.Context(), db, sql)
	require.NoError(e.t, err)
	return strings.TrimSpace(out)
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// testLogger logs at debug level to w.
func testLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// removeBelowTheLayer deletes key from the store under the API-server
// layer, as a repair by hand would: no finalizer runs.
func (s *storeServer) removeBelowTheLayer(t *testing.T, key string) {
	t.Helper()
	obj, err := s.mem.Get(t.Context(), key)
	require.NoError(t, err)
	_, err = s.mem.Delete(t.Context(), key, obj.Revision)
	require.NoError(t, err)
}

func mustExecutable(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}
