package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/converge-go/converge/examples/postgres/internal/cluster"
)

// This file is one attempt at a Restore, run as a process of its own
// ("postgres restore-run") as a backup's is (dumpshim.go): started as its
// attempt by intent.Runs, it makes sure the WAL up to a target instant is archived,
// restores the base backup into RestoreDir/NAME on a free loopback port,
// leaves that cluster running (it outlives this process, without holding
// the attempt), and writes its result.

// restoreCommand is the argument that runs this program as a restore.
const restoreCommand = "restore-run"

// restoreArgs are a restore process's arguments.
type restoreArgs struct {
	id, name, base, backup, dir, bin, archive, restoreDir, user string
	target                                                      restoreTarget
}

// parseRestoreArgs reads a restore process's command line; every value
// that becomes a path, a setting or an argument is checked.
func parseRestoreArgs(args []string, stderr io.Writer) (restoreArgs, bool) {
	var a restoreArgs
	fl := flag.NewFlagSet(restoreCommand, flag.ContinueOnError)
	fl.SetOutput(stderr)
	for name, p := range map[string]*string{"id": &a.id, "name": &a.name, "base": &a.base, "backup": &a.backup, "dir": &a.dir,
		"bin": &a.bin, "archive": &a.archive, "restore-dir": &a.restoreDir, "user": &a.user, "target-name": &a.target.name} {
		fl.StringVar(p, name, "", name)
	}
	at := fl.String("target-time", "", "the instant to restore to (RFC 3339)")
	if err := fl.Parse(args); err != nil {
		return a, false
	}
	var errs []error
	if *at != "" {
		t, err := time.Parse(time.RFC3339Nano, *at)
		a.target.time, errs = t, append(errs, err)
	}
	_, err := a.target.settings()
	errs = append(errs, err, checkAttemptID(a.id), checkAttemptID(a.base), checkNames("restore", a.name),
		checkSafePath("-archive", a.archive), checkSafePath("-restore-dir", a.restoreDir))
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(stderr, "postgres: restore-run: %v\n", err)
		return a, false
	}
	return a, true
}

// runRestore is the main of a restore process: it returns its exit code.
func runRestore(args []string, stderr io.Writer) int {
	a, ok := parseRestoreArgs(args, stderr)
	if !ok {
		return 2
	}
	return runAttempt(stderr, "restore", a.dir, a.id, func(ctx context.Context) RestoreResult { return restoreNew(ctx, a) })
}

// restoreNew restores a's base backup into its new cluster and returns
// the result; the cluster is left running.
func restoreNew(ctx context.Context, a restoreArgs) RestoreResult {
	res := RestoreResult{Started: time.Now().UTC(), Backup: a.backup, Target: a.target.name}
	if res.Target == "" {
		res.Target = a.target.time.UTC().Format(time.RFC3339Nano)
	}
	err := func() error {
		archive, err := newWALArchive(a.archive)
		if err != nil {
			return err
		}
		cred, err := cluster.Credential(a.user)
		if err != nil {
			return err
		}
		if !a.target.time.IsZero() {
			// The WAL up to the instant must be in the archive, or
			// recovery ends before reaching it.
			conn, err := connectEnv(ctx, "postgres", 0)
			if err != nil {
				return err
			}
			defer conn.Close(context.Background())
			if err := archive.switchAndWait(ctx, conn, 5*time.Minute); err != nil {
				return err
			}
		}
		port, err := cluster.FreePort()
		if err != nil {
			return err
		}
		c := &restoredCluster{dir: filepath.Join(a.restoreDir, a.name), bin: a.bin, archive: archive, cred: cred, port: port, keep: true}
		if err := c.restore(ctx, baseDir(a.dir, a.base), a.target); err != nil {
			c.stop()
			return err
		}
		res.DataDir, res.Port = c.data(), port
		return nil
	}()
	res.Finished = time.Now().UTC()
	res.RestoreMillis = res.Finished.Sub(res.Started).Milliseconds()
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.OK = true
	return res
}
