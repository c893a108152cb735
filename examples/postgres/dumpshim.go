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
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/converge-go/converge/reconcile/kit/intent"
)

// This file is one attempt at a backup, run as a process of its own
// ("postgres backup-run"), started by the operator once the attempt's
// intent is in the Backup's status. It
//
//  1. claims the attempt's ID: a file locked, then linked into place, so
//     that a second process of the same attempt runs nothing, and so that
//     the operator tells a running attempt (the lock is held) from one that
//     died (it is not);
//  2. takes the server's dump lock, an advisory lock held for the whole
//     dump on a session of its own: dumps run one at a time on a server;
//  3. runs pg_dump (custom format, its application_name the attempt's ID)
//     into a temporary file beside the dump's path (reconcile/kit/intent.File);
//  4. checks the dump with pg_restore --list, which reads its whole table
//     of contents;
//  5. only then renames it into place after fsync (File.Commit): the path
//     of a dump is absent or complete, never partial;
//  6. writes its result file (intent.WriteFile), which the operator reads.
//
// The libpq environment (PGHOST, PGPORT, PGUSER, PGPASSWORD, ...) comes
// from the operator; no secret is ever on a command line.

// dumpCommand is the argument that runs this program as a dump.
const dumpCommand = "backup-run"

// errClaimed: another process claimed the attempt first.
var errClaimed = errors.New("postgres: attempt already claimed")

// dumpLock names the advisory lock every dump holds while it runs.
const dumpLock = "dumps"

// runDump is the main of a dump process: it returns its exit code.
func runDump(args []string, stderr io.Writer) int {
	fl := flag.NewFlagSet(dumpCommand, flag.ContinueOnError)
	fl.SetOutput(stderr)
	id := fl.String("id", "", "the attempt's ID")
	database := fl.String("database", "", "the database to dump")
	dir := fl.String("dir", "", "the backups' directory")
	bin := fl.String("bin", "", "the directory of pg_dump and pg_restore")
	if err := fl.Parse(args); err != nil || *id == "" || *database == "" || *dir == "" {
		fmt.Fprintln(stderr, "usage: postgres backup-run -id ID -database DB -dir DIR [-bin DIR]")
		return 2
	}
	// The ID and the database name become paths under dir: only those the
	// operator makes are taken.
	if err := errors.Join(checkAttemptID(*id), checkNames("database", *database)); err != nil {
		fmt.Fprintf(stderr, "postgres: backup-run: %v\n", err)
		return 2
	}
	runs := filepath.Join(*dir, ".runs")
	claim, err := claimAttempt(runs, *id)
	if errors.Is(err, errClaimed) {
		return 0 // the attempt is another process's
	}
	if err != nil {
		fmt.Fprintf(stderr, "postgres: backup %s: %v\n", *id, err)
		return 1
	}
	defer claim.Close() // the lock goes with the process anyway
	res := dump(context.Background(), *id, *database, *dir, *bin)
	b, _ := json.Marshal(res)
	if err := intent.WriteFile(filepath.Join(runs, *id+".json"), b, 0o600); err != nil {
		fmt.Fprintf(stderr, "postgres: backup %s: result: %v\n", *id, err)
		return 1
	}
	return 0
}

// claimAttempt claims id in runs: a temporary file, locked, is linked to
// ID.claim, which fails if it exists. The claim is locked from the moment
// it exists until this process ends.
func claimAttempt(runs, id string) (*os.File, error) {
	if err := os.MkdirAll(runs, 0o700); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(runs, "."+id+".claim-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	if err := os.Link(f.Name(), filepath.Join(runs, id+".claim")); err != nil {
		f.Close()
		if errors.Is(err, fs.ErrExist) {
			return nil, errClaimed
		}
		return nil, err
	}
	return f, nil
}

// dump makes the dump of database for attempt id and returns its result.
func dump(ctx context.Context, id, database, dir, bin string) DumpResult {
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
	cfg.RuntimeParams["application_name"] = id + "/lock"
	lock, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return finish(fmt.Errorf("connecting for the dump lock: %w", err))
	}
	defer lock.Close(context.Background())
	if _, err := lock.Exec(ctx, "SELECT pg_advisory_lock($1)", lockID(dumpLock)); err != nil {
		return finish(fmt.Errorf("taking the dump lock: %w", err))
	}
	path := filepath.Join(dir, database, id+".dump")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return finish(err)
	}
	f, err := intent.CreateFile(path, 0o600)
	if err != nil {
		return finish(err)
	}
	defer f.Close() // removes the temporary file unless committed
	if err := runTool(ctx, filepath.Join(bin, "pg_dump"), id, "-Fc", "--no-password", "-f", f.TempName(), "-d", database); err != nil {
		return finish(err)
	}
	entries, err := verifyDump(ctx, bin, f.TempName())
	if err != nil {
		return finish(err)
	}
	if err := f.Commit(); err != nil {
		return finish(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return finish(err)
	}
	res.OK, res.File, res.Bytes, res.Entries = true, path, fi.Size(), entries
	return finish(nil)
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
