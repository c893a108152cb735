package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/converge-go/converge/examples/internal/procs"
	"github.com/converge-go/converge/examples/postgres/internal/cluster"
)

// This file restores a base backup plus the WAL archive into a cluster of
// its own: for a backup's restore drill, a scratch cluster torn down once
// checked; for a Restore, a new cluster left running. The cluster's
// directory, data directory and port are the operator's (a name it made,
// under its restore directory; a free loopback port), never a path read
// from a spec or a status.

// restoreTarget is where recovery stops: a named restore point, or an
// instant (the last transaction committed at or before it is kept).
type restoreTarget struct {
	name string
	time time.Time
}

// settings are the recovery settings of target.
func (t restoreTarget) settings() (string, error) {
	if t.name != "" {
		if err := checkAttemptID(t.name); err != nil {
			return "", err
		}
		return "recovery_target_name = " + literal(t.name) + "\n", nil
	}
	if t.time.IsZero() {
		return "", fmt.Errorf("%w: a restore needs a restore point or a time", ErrInvalidSpec)
	}
	return "recovery_target_time = " + literal(t.time.UTC().Format("2006-01-02 15:04:05.999999")+"+00") + "\n", nil
}

// restoredCluster is a cluster being restored, or restored.
type restoredCluster struct {
	dir     string // dir/data, dir/postgres.log
	bin     string
	archive *walArchive
	cred    *syscall.Credential // the user it runs as, when this process is root
	port    int
	keep    bool        // a Restore's: fsync on, outlives this process
	proc    *procs.Proc // the server this process started, if it did
}

func (c *restoredCluster) data() string { return filepath.Join(c.dir, "data") }

// restore removes whatever an earlier attempt left in c.dir (stopping its
// server), copies the base backup at base into c.dir/data, sets recovery
// to target from the archive, starts the server on c.port and waits until
// recovery reached the target and the server was promoted.
func (c *restoredCluster) restore(ctx context.Context, base string, target restoreTarget) error {
	if err := errors.Join(checkSafePath("the restore's directory", c.dir), stopLeftover(c.data())); err != nil {
		return err
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return err
	}
	if err := c.mkdir(c.dir); err != nil {
		return err
	}
	if err := copyTree(base, c.data(), c.cred); err != nil {
		return fmt.Errorf("copying the base backup: %w", err)
	}
	if err := c.configure(target); err != nil {
		return err
	}
	if err := c.start(); err != nil {
		return err
	}
	return c.waitPromoted(ctx)
}

// mkdir makes dirs, mode 0700, owned by the cluster's user.
func (c *restoredCluster) mkdir(dirs ...string) error {
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		if err := chown(d, c.cred); err != nil {
			return err
		}
	}
	return nil
}

// configure writes the cluster's settings over the backup's: its own
// port, sockets and access, no archiving (a restored cluster never writes
// into the archive it reads), recovery from the archive to target.
func (c *restoredCluster) configure(target restoreTarget) error {
	rec, err := target.settings()
	if err != nil {
		return err
	}
	fsync := "off"
	if c.keep {
		fsync = "on"
	}
	conf := "# written by the converge PostgreSQL operator's restore\n" +
		"port = " + strconv.Itoa(c.port) + "\nlisten_addresses = '127.0.0.1'\n" +
		"unix_socket_directories = ''\n" + // TCP alone: a socket's path has at most 107 bytes

		"archive_mode = off\nhot_standby = off\nfsync = " + fsync + "\n" +
		"restore_command = " + literal(c.archive.restoreCommand()) + "\n" +
		rec + "recovery_target_action = promote\n"
	files := map[string]string{
		"postgresql.auto.conf": conf,
		"pg_hba.conf":          "host all all 127.0.0.1/32 md5\n",
		"recovery.signal":      "",
	}
	for _, optional := range []string{"postgresql.conf", "pg_ident.conf"} {
		if _, err := os.Stat(filepath.Join(c.data(), optional)); errors.Is(err, fs.ErrNotExist) {
			files[optional] = "" // kept outside the data directory on the source (Debian's /etc)
		}
	}
	for name, body := range files {
		p := filepath.Join(c.data(), name)
		if err := errors.Join(os.WriteFile(p, []byte(body), 0o600), chown(p, c.cred)); err != nil {
			return err
		}
	}
	return nil
}

// start starts the server, in a process group of its own: a drill's
// server dies with this process, a Restore's outlives it.
func (c *restoredCluster) start() error {
	log, err := os.OpenFile(filepath.Join(c.dir, "postgres.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	if err := chown(log.Name(), c.cred); err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(c.bin, "postgres"), "-D", c.data())
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Setsid: true}
	if !c.keep {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	p, err := procs.Start(cmd)
	if err != nil {
		return fmt.Errorf("starting the restored cluster: %w", err)
	}
	c.proc = p
	return nil
}

// waitPromoted waits until the server accepts connections and has left
// recovery; a server that exits first (recovery ended before its target:
// WAL missing or damaged) is an error with its log's end.
func (c *restoredCluster) waitPromoted(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Minute)
	for {
		if conn, err := connectEnv(ctx, "postgres", c.port); err == nil {
			var recovering bool
			err = conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovering)
			conn.Close(context.Background())
			if err == nil && !recovering {
				return nil
			}
		}
		select {
		case <-c.proc.Done():
			return fmt.Errorf("the restored cluster stopped before reaching its target: %s", c.logTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the restored cluster did not reach its target within 30m: %s", c.logTail())
		}
	}
}

// logTail is the server log's last errors: its FATAL says why a restore
// failed.
func (c *restoredCluster) logTail() string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "postgres.log"))
	var errs []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.Contains(l, "starting up") || strings.Contains(l, "not accepting connections") { // its own connection attempts
			continue
		}
		if strings.Contains(l, "FATAL:") || strings.Contains(l, "PANIC:") || strings.Contains(l, "ERROR:") {
			errs = append(errs, strings.TrimSpace(l))
		}
	}
	return strings.Join(errs[max(0, len(errs)-3):], " | ")
}

// stop stops the server this process started (a fast shutdown).
func (c *restoredCluster) stop() {
	if c.proc != nil {
		_ = c.proc.StopWith(syscall.SIGINT, 30*time.Second)
	}
}

// drill restores the base backup at base into a scratch cluster in dir to
// its restore point, checks that its catalog answers and that database
// holds the rows and checksum recorded at the restore point, and tears it
// down. It sets res.Verified and res.RestoreMillis only if all of that
// held.
func drill(ctx context.Context, base, dir, bin, database string, archive *walArchive, cred *syscall.Credential, res *BaseResult) error {
	port, err := cluster.FreePort()
	if err != nil {
		return err
	}
	c := &restoredCluster{dir: dir, bin: bin, archive: archive, cred: cred, port: port}
	defer func() { c.stop(); _ = os.RemoveAll(dir) }()
	started := time.Now()
	if err := verifyBackup(ctx, bin, base); err != nil {
		return err
	}
	if err := c.restore(ctx, base, restoreTarget{name: res.RestorePoint}); err != nil {
		return err
	}
	conn, err := connectEnv(ctx, database, port)
	if err != nil {
		return fmt.Errorf("the restored cluster: %w", err)
	}
	defer conn.Close(context.Background())
	var databases int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database").Scan(&databases); err != nil || databases == 0 {
		return fmt.Errorf("the restored catalog: %d databases, %v", databases, err)
	}
	tables, err := userTables(ctx, conn)
	if err != nil {
		return err
	}
	rows, sum, err := checksum(ctx, conn, tables)
	if err != nil {
		return err
	}
	if rows != res.Rows || sum != res.Checksum {
		return fmt.Errorf("restored %s holds %d rows (checksum %.12s), recorded %d (checksum %.12s)", database, rows, sum, res.Rows, res.Checksum)
	}
	res.Verified, res.RestoreMillis = true, time.Since(started).Milliseconds()
	return nil
}

// verifyBackup checks the base backup's files against its manifest's
// checksums (pg_verifybackup; its WAL is checked by the restore itself).
func verifyBackup(ctx context.Context, bin, base string) error {
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "pg_verifybackup"), "-n", "-q", base).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_verifybackup: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// stopLeftover kills the server an earlier attempt left running on data.
func stopLeftover(data string) error { return stopServer(data, syscall.SIGQUIT) }

// stopServer stops the server running on data (its postmaster.pid), if
// that process is a postgres of data, with sig (SIGINT: a fast shutdown;
// SIGQUIT: immediate), and kills its group if it still runs after 30s.
func stopServer(data string, sig syscall.Signal) error {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 1 {
		return nil
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), "postgres") || !strings.Contains(string(cmdline), data) {
		return nil // gone, or another process now
	}
	_ = syscall.Kill(pid, sig)
	for range 300 {
		if syscall.Kill(pid, 0) != nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return syscall.Kill(-pid, syscall.SIGKILL)
}

// copyTree copies the directory src to dst (made), files mode 0600 and
// directories 0700, owned by cred's user; a symbolic link (a tablespace)
// is refused.
func copyTree(src, dst string, cred *syscall.Credential) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			if err := os.MkdirAll(to, 0o700); err != nil {
				return err
			}
		case d.Type().IsRegular():
			if err := copyFile(path, to); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: only files and directories are restored (tablespaces are not)", rel)
		}
		return chown(to, cred)
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}

// chown gives path to cred's user, if any.
func chown(path string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	return os.Lchown(path, int(cred.Uid), int(cred.Gid))
}
