// Package cluster runs a private PostgreSQL server for the postgres
// example's demo and tests: a cluster made with initdb in a temporary
// directory, served by its own postgres process on 127.0.0.1 and a free
// port, its unix sockets in that directory, as an unprivileged user
// (PostgreSQL refuses to run as root: run as root, the process drops to the
// user "postgres", which Debian's package creates).
//
// The cluster logs every DDL statement (log_statement = 'ddl') and every
// connection and disconnection with its application name and transaction
// ID, so that a test can count the CREATEs an operator made (those whose
// transaction committed) and tell when each dump ran. It
// runs with fsync off: its data is thrown away with it.
//
// Its superuser's password is random, made for the cluster; it is in DSN
// and Env, and never in an error or a log line of this package.
package cluster

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/converge-go/converge/examples/internal/procs"
)

// Errors of the package: what a caller that must skip names. Test for them
// with errors.Is.
var (
	// ErrNotInstalled: no PostgreSQL server programs (initdb, postgres)
	// were found.
	ErrNotInstalled = errors.New("cluster: PostgreSQL server programs not found (Debian: apt-get install postgresql)")
	// ErrNoUser: running as root, and there is no unprivileged user to run
	// PostgreSQL as.
	ErrNoUser = errors.New("cluster: running as root and no unprivileged user to run PostgreSQL as (Debian's postgresql package creates the user postgres)")
	// ErrStopped: the cluster's server is not running.
	ErrStopped = errors.New("cluster: server not running")
)

// Superuser is the name of the cluster's superuser, the role the operator
// connects as.
const Superuser = "converge"

// startLimit bounds how long Start waits for the server to accept
// connections.
const startLimit = 60 * time.Second

// Options configure a cluster. The zero value works.
type Options struct {
	// BinDir holds initdb, postgres, psql, pg_dump and pg_restore (default:
	// $CONVERGE_PG_BIN, else the newest /usr/lib/postgresql/*/bin, else
	// the directory of initdb on $PATH).
	BinDir string
	// User is the user the server runs as when this process runs as root
	// (default "postgres"); otherwise the server runs as this process's
	// user.
	User string
	// Settings are more of the server's settings ("archive_mode=on"),
	// given with -c after the package's own.
	Settings []string
}

// Cluster is a private PostgreSQL server. Its methods are safe for use
// from one goroutine at a time.
type Cluster struct {
	dir, bin string
	port     int
	password string
	cred     *syscall.Credential
	settings []string

	proc *procs.Proc // the server, while it runs
}

// BinDir returns the directory of the PostgreSQL programs opts names or
// finds, or an error matching ErrNotInstalled.
func BinDir(opts Options) (string, error) {
	candidates := []string{opts.BinDir, os.Getenv("CONVERGE_PG_BIN")}
	if opts.BinDir == "" && candidates[1] == "" {
		found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
		slices.SortFunc(found, func(a, b string) int { return versionOf(b) - versionOf(a) })
		candidates = append(candidates, found...)
		if p, err := exec.LookPath("initdb"); err == nil {
			candidates = append(candidates, filepath.Dir(p))
		}
	}
	for _, dir := range candidates {
		if dir == "" {
			continue
		}
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", ErrNotInstalled
}

// versionOf reads the major version in /usr/lib/postgresql/NN/bin.
func versionOf(bin string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return n
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Credential returns the credential a server runs with: nil when this
// process is not root, else that of the user name (default "postgres"), or
// an error matching ErrNoUser.
func Credential(name string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	if name == "" {
		name = "postgres"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoUser, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil || uid == 0 {
		return nil, fmt.Errorf("%w: user %s is not an unprivileged user", ErrNoUser, name)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// Start makes a cluster in a new temporary directory and starts its
// server. It fails with ErrNotInstalled or ErrNoUser when it cannot run
// one; call Remove when done, also after a failed test.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	bin, err := BinDir(opts)
	if err != nil {
		return nil, err
	}
	cred, err := Credential(opts.User)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "converge-postgres-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, bin: bin, cred: cred, password: rand.Text(), settings: opts.Settings}
	if err := c.initdb(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

// initdb makes the cluster's data directory, its superuser's password
// given in a file removed once read.
func (c *Cluster) initdb(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Join(c.dir, "sock"), 0o700); err != nil {
		return err
	}
	pwfile := filepath.Join(c.dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(c.password+"\n"), 0o600); err != nil {
		return err
	}
	defer os.Remove(pwfile)
	if c.cred != nil {
		for _, p := range []string{c.dir, filepath.Join(c.dir, "sock"), pwfile} {
			if err := os.Chown(p, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
				return err
			}
		}
	}
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, "initdb"), "-D", c.DataDir(), "-U", Superuser,
		"--pwfile", pwfile, "--auth", "scram-sha-256", "-E", "UTF8", "--locale", "C", "--no-sync")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cluster: initdb: %v\n%s", err, out)
	}
	return nil
}

// Start starts the cluster's server again after Stop, on the same port if
// it is still free. It returns once the server accepts connections.
func (c *Cluster) Start(ctx context.Context) error {
	if c.proc != nil {
		return nil
	}
	if c.port == 0 || !portFree(c.port) {
		p, err := FreePort()
		if err != nil {
			return err
		}
		c.port = p
	}
	log, err := os.OpenFile(c.LogFile(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(filepath.Join(c.bin, "postgres"), "-D", c.DataDir(), "-p", strconv.Itoa(c.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+filepath.Join(c.dir, "sock"),
		"-c", "log_statement=ddl", "-c", "log_line_prefix=%m [%p] %x %a ",
		"-c", "log_connections=on", "-c", "log_disconnections=on",
		"-c", "fsync=off", "-c", "max_connections=200")
	for _, s := range c.settings {
		cmd.Args = append(cmd.Args, "-c", s)
	}
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group, so that a terminal's ^C reaches the demo
	// alone, which stops the server; killed if this process dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p, err := procs.Start(cmd)
	if err != nil {
		return fmt.Errorf("cluster: postgres: %w", err)
	}
	c.proc = p
	return c.waitReady(ctx)
}

// waitReady waits until the server accepts a connection.
func (c *Cluster) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(startLimit)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(cctx, c.DSN("postgres"))
		cancel()
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-c.proc.Done():
			c.proc = nil
			return fmt.Errorf("cluster: postgres exited at start; see %s", c.LogFile())
		case <-ctx.Done():
			c.Stop()
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.Stop()
			return fmt.Errorf("cluster: postgres not accepting connections after %v; see %s", startLimit, c.LogFile())
		}
	}
}

// Stop stops the server (a fast shutdown: SIGINT, then SIGKILL after 30
// seconds) and waits for it to exit. Stopping a stopped cluster does
// nothing.
func (c *Cluster) Stop() error {
	if c.proc == nil {
		return nil
	}
	defer func() { c.proc = nil }()
	if err := c.proc.StopWith(syscall.SIGINT, 30*time.Second); errors.Is(err, procs.ErrKilled) {
		return fmt.Errorf("cluster: postgres: %w", err)
	}
	return nil // however it ended, it has
}

// Running reports whether the server runs.
func (c *Cluster) Running() bool { return c.proc != nil }

// Remove stops the server and removes the cluster's directory.
func (c *Cluster) Remove() error {
	return errors.Join(c.Stop(), os.RemoveAll(c.dir))
}

// Dir is the cluster's directory; DataDir its data directory, LogFile the
// server's log.
func (c *Cluster) Dir() string     { return c.dir }
func (c *Cluster) DataDir() string { return filepath.Join(c.dir, "data") }
func (c *Cluster) LogFile() string { return filepath.Join(c.dir, "postgres.log") }

// BinDir is the directory of the PostgreSQL programs the cluster runs.
func (c *Cluster) BinDir() string { return c.bin }

// Port is the TCP port the server listens on, at 127.0.0.1.
func (c *Cluster) Port() int { return c.port }

// DSN returns a connection string for database db as the superuser. It
// holds the password: never print or log it.
func (c *Cluster) DSN(db string) string {
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable", Superuser, c.password, c.port, db)
}

// DSNWithoutPassword returns DSN without the password, which then comes
// from the PGPASSWORD of Env.
func (c *Cluster) DSNWithoutPassword(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", Superuser, c.port, db)
}

// Password is the superuser's password: never print or log it.
func (c *Cluster) Password() string { return c.password }

// Env returns the libpq environment (PGHOST, PGPORT, PGUSER, PGPASSWORD)
// that connects psql, pg_dump and pg_restore to the cluster. It holds the
// password: never print or log it.
func (c *Cluster) Env() []string {
	return []string{"PGHOST=127.0.0.1", "PGPORT=" + strconv.Itoa(c.port), "PGUSER=" + Superuser,
		"PGPASSWORD=" + c.password, "PGSSLMODE=disable"}
}

// Psql runs sql with psql in database db, as a person would at a shell,
// and returns what it printed (unaligned, tuples only).
func (c *Cluster) Psql(ctx context.Context, db, sql string) (string, error) {
	return c.PsqlAt(ctx, c.port, db, sql)
}

// PsqlAt is Psql on the server at 127.0.0.1:port with the cluster's
// credentials: a cluster restored from this one's backup.
func (c *Cluster) PsqlAt(ctx context.Context, port int, db, sql string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", sql)
	cmd.Env = append(append(os.Environ(), c.Env()...), "PGPORT="+strconv.Itoa(port))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("cluster: psql: %v: %s", err, out)
	}
	return string(out), nil
}

// FreePort returns a TCP port free on 127.0.0.1 now.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func portFree(port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}
