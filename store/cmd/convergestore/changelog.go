package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/changelog"
)

// The store's change log: -log-dir ships every change of the store into
// a directory (store/changelog), and -restore-from LOGDIR makes the store
// from it, to its last revision or to -restore-to-revision or
// -restore-to-time.

// registerLogFlags declares the change log's flags on fs, bound to cfg.
func registerLogFlags(fs *flag.FlagSet, cfg *config) {
	fs.StringVar(&cfg.logDir, "log-dir", "", "ship every change of the store into this `directory` (created with mode 0700), synced within a tenth of a second; it begins with a snapshot, saved into -snapshot-dir (or the log's directory), and keeps what the oldest snapshot there needs (with -snapshot-dir, the last -snapshot-keep snapshots' worth): -restore-from DIR restores from it")
	fs.Int64Var(&cfg.restoreToRevision, "restore-to-revision", 0, "with -restore-from a log directory: restore the state the store had at this `revision` (default: the log's last)")
	fs.Func("restore-to-time", "with -restore-from a log directory: restore the state the log had shipped at this `time` (RFC 3339)", func(v string) error {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return fmt.Errorf("want RFC 3339, such as 2026-12-07T15:04:05Z: %w", err)
		}
		cfg.restoreToTime = t
		return nil
	})
}

// logContradiction names what is out of range or contradictory in the
// change log's flags, or returns "".
func (cfg *config) logContradiction() string {
	switch {
	case cfg.restoreToRevision < 0:
		return fmt.Sprintf("-restore-to-revision %d: want more than 0", cfg.restoreToRevision)
	case cfg.restoreToRevision != 0 && !cfg.restoreToTime.IsZero():
		return "-restore-to-revision and -restore-to-time together: restore to a revision or to a time"
	case (cfg.restoreToRevision != 0 || !cfg.restoreToTime.IsZero()) && cfg.restoreFrom == "":
		return "-restore-to-revision and -restore-to-time go with -restore-from a log directory"
	}
	return ""
}

// restoreFromLog makes the store file at path from the change log in the
// directory of -restore-from, and the snapshots there and in
// -snapshot-dir.
func restoreFromLog(path string, cfg config, opts []boltstore.Option, stdout io.Writer, log *slog.Logger) error {
	a := changelog.Archive{Dir: cfg.restoreFrom, SnapshotDirs: []string{cfg.restoreFrom}}
	if cfg.snapshotDir != "" && cfg.snapshotDir != cfg.restoreFrom {
		a.SnapshotDirs = append(a.SnapshotDirs, cfg.snapshotDir)
	}
	r, p, err := a.State(context.Background(), changelog.Target{Revision: cfg.restoreToRevision, Time: cfg.restoreToTime})
	if err != nil {
		return fmt.Errorf("-restore-from %s: %w", cfg.restoreFrom, err)
	}
	if p.Torn != nil {
		log.Warn("the change log ends in a torn record (a crash while it was written); restored up to the record before it", "err", p.Torn)
	}
	restored, err := boltstore.Restore(path, r, opts...)
	if err != nil {
		return restoreError(cfg, err)
	}
	fmt.Fprintf(stdout, "convergestore: restored %s from the change log %s: revision %d of store %s (snapshot %s of revision %d and %d changes after it; the log holds up to %d), now at revision %d\n",
		path, cfg.restoreFrom, p.Revision, p.Identity, p.Snapshot, p.SnapshotRevision, p.Records, p.Last, restored.Revision)
	log.Info("store restored from a change log", "file", path, "log", cfg.restoreFrom, "revision restored", p.Revision,
		"snapshot", p.Snapshot, "changes", p.Records, "log's last revision", p.Last, "revision", restored.Revision)
	return nil
}

// addShipper adds to m, with -log-dir, the runnable that ships the
// store's changes.
func addShipper(m *manager.Manager, s *boltstore.Store[json.RawMessage], cfg config, log *slog.Logger) error {
	if cfg.logDir == "" {
		return nil
	}
	sh, err := changelog.NewShipper[json.RawMessage](s, nil, changelog.Options{
		Dir: cfg.logDir, SnapshotDir: cmp.Or(cfg.snapshotDir, cfg.logDir),
		InsecurePermissions: cfg.insecurePermissions, Logger: log,
	})
	if err != nil {
		return err
	}
	return m.Add(sh)
}
