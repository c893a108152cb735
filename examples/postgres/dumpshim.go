package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/converge-go/converge/examples/postgres/internal/cluster"
	"github.com/converge-go/converge/reconcile/kit/intent"
)

// This file is one attempt at a backup, run as a process of its own
// ("postgres backup-run"), started by the operator once the attempt's
// intent is in the Backup's status. It
//
//  1. checks that it was started as its attempt (intent.Runs.Start, which
//     starts an attempt once and tells the operator whether it runs, across
//     a SIGKILL of either), and keeps that attempt to itself: the programs
//     it starts, a restored cluster that outlives it among them, do not
//     hold it;
//  2. takes the server's dump lock, an advisory lock held for the whole
//     dump on a session of its own: dumps run one at a time on a server;
//  3. runs pg_dump (custom format, its application_name the attempt's ID)
//     into a temporary file beside the dump's path (reconcile/kit/intent.File);
//  4. checks the dump with pg_restore --list, which reads its whole table
//     of contents;
//  5. only then renames it into place after fsync (File.Commit): the path
//     of a dump is absent or complete, never partial;
//  6. writes its result (intent.WriteResult), which the operator reads.
//
// For a base backup (-method base), steps 3 to 5 are instead: the base
// backup, its restore point and the WAL up to it archived
// (basebackup.go), then its restore drill in a scratch cluster that dies
// with this process (drill.go); the result says OK only after the drill.
//
// The libpq environment (PGHOST, PGPORT, PGUSER, PGPASSWORD, ...) comes
// from the operator; no secret is ever on a command line.

// dumpCommand is the argument that runs this program as a dump.
const dumpCommand = "backup-run"

// baseBackupLimit bounds a base backup and its drill.
const baseBackupLimit = 6 * time.Hour

// dumpLock names the advisory lock every dump holds while it runs.
const dumpLock = "dumps"

// shimArgs are a backup process's arguments.
type shimArgs struct {
	id, database, dir, bin string
	method                 BackupMethod
	// For MethodBase: the WAL archive, the directory of the drill's
	// scratch cluster, and the user it runs as when this process is root.
	archive, scratch, user string
}

// parseShimArgs reads a backup process's command line; every value that
// becomes a path or an argument is checked, whoever started the process.
func parseShimArgs(args []string, stderr io.Writer) (shimArgs, bool) {
	var a shimArgs
	fl := flag.NewFlagSet(dumpCommand, flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.StringVar(&a.id, "id", "", "the attempt's ID")
	fl.StringVar(&a.database, "database", "", "the database to dump, or to check in the drill")
	fl.StringVar(&a.dir, "dir", "", "the backups' directory")
	fl.StringVar(&a.bin, "bin", "", "the directory of PostgreSQL's programs")
	method := fl.String("method", "", "dump or base")
	fl.StringVar(&a.archive, "archive", "", "the WAL archive (base)")
	fl.StringVar(&a.scratch, "scratch", "", "the drill's scratch directory (base)")
	fl.StringVar(&a.user, "user", "", "the user the scratch cluster runs as, when root (base)")
	if err := fl.Parse(args); err != nil || a.id == "" || a.database == "" || a.dir == "" {
		fmt.Fprintln(stderr, "usage: postgres backup-run -id ID -database DB -dir DIR [-bin DIR] [-method base -archive DIR -scratch DIR [-user U]]")
		return a, false
	}
	var err error
	a.method, err = BackupSpec{Method: BackupMethod(*method)}.method()
	err = errors.Join(err, checkAttemptID(a.id), checkNames("database", a.database))
	if err == nil && a.method == MethodBase {
		err = errors.Join(checkSafePath("-archive", a.archive), checkSafePath("-scratch", a.scratch))
	}
	if err != nil {
		fmt.Fprintf(stderr, "postgres: backup-run: %v\n", err)
		return a, false
	}
	return a, true
}

// runDump is the main of a backup process: it returns its exit code.
func runDump(args []string, stderr io.Writer) int {
	a, ok := parseShimArgs(args, stderr)
	if !ok {
		return 2
	}
	return runAttempt(stderr, "backup", a.dir, a.id, func(ctx context.Context) DumpResult { return dump(ctx, a) })
}

// runAttempt is the rest of the main of a backup or restore process,
// once its arguments are checked: it runs nothing unless the operator
// started it as attempt id of dir's runs (exit code 2), then runs do and
// writes its result where intent.Runs.Find reads it (exit code 0, or 1
// if the result cannot be written).
func runAttempt[R any](stderr io.Writer, what, dir, id string, do func(ctx context.Context) R) int {
	if err := startedAsAttempt(dir, id); err != nil {
		fmt.Fprintf(stderr, "postgres: %s %s: %v\n", what, id, err)
		return 2
	}
	b, _ := json.Marshal(do(context.Background()))
	if err := intent.WriteResult(b); err != nil {
		fmt.Fprintf(stderr, "postgres: %s %s: result: %v\n", what, id, err)
		return 1
	}
	return 0
}

// attemptFD is the descriptor of the attempt's lock that Runs.Start hands
// to a backup or restore process: its first extra file.
const attemptFD = 3

// startedAsAttempt returns an error matching ErrInvalidSpec unless this
// process was started by the operator as attempt id of the backups'
// directory dir (Runs.Start: its result goes where Runs.Find reads it), so
// that a process started otherwise runs nothing. It keeps the attempt's
// lock from the programs this process starts: the attempt ends with it.
func startedAsAttempt(dir, id string) error {
	want, err := dumpRunnerRuns(dir).ResultPath(id)
	if err != nil || os.Getenv(intent.ResultEnv) != want {
		return fmt.Errorf("%w: not started by the operator as attempt %s", ErrInvalidSpec, id)
	}
	syscall.CloseOnExec(attemptFD)
	return nil
}

// dump makes attempt a's backup and returns its result: for MethodBase,
// OK only once its drill verified it.
func dump(ctx context.Context, a shimArgs) DumpResult {
	res := DumpResult{Started: time.Now().UTC()}
	finish := func(err error) DumpResult {
		res.Finished = time.Now().UTC()
		if err != nil {
			res.OK, res.Error, res.File = false, err.Error(), ""
		}
		return res
	}
	cfg, err := pgx.ParseConfig("") // the libpq environment
	if err != nil {
		return finish(err)
	}
	cfg.RuntimeParams["application_name"] = a.id + "/lock"
	lock, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return finish(fmt.Errorf("connecting for the dump lock: %w", err))
	}
	defer lock.Close(context.Background())
	if _, err := lock.Exec(ctx, "SELECT pg_advisory_lock($1)", lockID(dumpLock)); err != nil {
		return finish(fmt.Errorf("taking the dump lock: %w", err))
	}
	if a.method == MethodBase {
		return finish(baseBackupAndDrill(ctx, a, &res))
	}
	return finish(dumpOne(ctx, a, &res))
}

// dumpOne makes a's pg_dump, checks it with pg_restore --list and renames
// it into place.
func dumpOne(ctx context.Context, a shimArgs, res *DumpResult) error {
	path := filepath.Join(a.dir, a.database, a.id+".dump")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := intent.CreateFile(path, 0o600)
	if err != nil {
		return err
	}
	defer f.Close() // removes the temporary file unless committed
	if err := runTool(ctx, filepath.Join(a.bin, "pg_dump"), a.id, "-Fc", "--no-password", "-f", f.TempName(), "-d", a.database); err != nil {
		return err
	}
	entries, err := verifyDump(ctx, a.bin, f.TempName())
	if err != nil {
		return err
	}
	if err := f.Commit(); err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	res.OK, res.File, res.Bytes, res.Entries = true, path, fi.Size(), entries
	return nil
}

// baseBackupAndDrill makes a's base backup, then its restore drill: the
// result is OK, and the backup counted, only once the drill verified it.
func baseBackupAndDrill(ctx context.Context, a shimArgs, res *DumpResult) error {
	// pg_basebackup -X none waits for the archive: one that fails would
	// hold the backup, and the server's dump lock, forever.
	ctx, cancel := context.WithTimeout(ctx, baseBackupLimit)
	defer cancel()
	archive, err := newWALArchive(a.archive)
	if err != nil {
		return err
	}
	cred, err := cluster.Credential(a.user)
	if err != nil {
		return err
	}
	base, size, err := takeBaseBackup(ctx, a.id, a.database, a.dir, a.bin, archive)
	res.Base, res.Bytes, res.File = &base, size, baseDir(a.dir, a.id)
	if err != nil {
		return fmt.Errorf("base backup: %w", err)
	}
	if err := drill(ctx, res.File, filepath.Join(a.scratch, a.id), a.bin, a.database, archive, cred, res.Base); err != nil {
		return fmt.Errorf("restore drill: %w", err)
	}
	res.OK = true
	return nil
}

// verifyDump runs pg_restore --list on the dump at path and returns the
// entries of its table of contents, or an error if it cannot read it.
func verifyDump(ctx context.Context, bin, path string) (int, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "pg_restore"), "--list", path)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("pg_restore --list: %v: %s", err, strings.TrimSpace(errOut.String()))
	}
	return countEntries(&out), nil
}

// countEntries counts the entries of pg_restore --list's output: its
// lines that are not comments (";") or blank.
func countEntries(r io.Reader) int {
	n := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, ";") {
			n++
		}
	}
	return n
}

// runTool runs a PostgreSQL program with the attempt's ID as its
// application_name, killed if this process dies first.
func runTool(ctx context.Context, path, id string, args ...string) error {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), "PGAPPNAME="+id)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %v: %s", filepath.Base(path), err, strings.TrimSpace(errOut.String()))
	}
	return nil
}
