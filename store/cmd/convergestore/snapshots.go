package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/snapshot"
)

// The store's snapshots: -restore-from makes the store from a snapshot
// file, -recover-from recovers a damaged store file from a directory of
// snapshots (its own store's, chosen by identity, then revision) or from a
// snapshot file named, and -snapshot-dir saves snapshots on a schedule.

// registerSnapshotFlags declares the snapshot flags on fs, bound to cfg.
func registerSnapshotFlags(fs *flag.FlagSet, cfg *config) {
	fs.StringVar(&cfg.restoreFrom, "restore-from", "", "make the store from the snapshot in this `file` (convergectl snapshot save, or -snapshot-dir), or from the change log in this directory (-log-dir) and its snapshots there and in -snapshot-dir, then serve it: -dir must hold no store file yet; the store gets a new identity and revisions above the snapshot's")
	fs.StringVar(&cfg.recoverFrom, "recover-from", "", "if the store file is damaged, move it aside and restore in its place the good snapshot of its own store with the highest revision in this `directory` (it is left as it is if there is none, or if its identity cannot be read), or the snapshot file named, whatever store it is of")
	fs.StringVar(&cfg.snapshotDir, "snapshot-dir", "", "save a snapshot of the store into this `directory` (created with mode 0700) at start and then at every -snapshot-every in which the store changed")
	fs.DurationVar(&cfg.snapshotEvery, "snapshot-every", 0, fmt.Sprintf("how often to look whether the store changed and save a snapshot if it did, with -snapshot-dir (0: %v)", snapshot.DefaultEvery))
	fs.IntVar(&cfg.snapshotKeep, "snapshot-keep", 0, fmt.Sprintf("how many good snapshots -snapshot-dir keeps; older ones are removed (0: %d)", snapshot.DefaultKeep))
}

// snapshotContradiction names what is out of range or contradictory in
// the snapshot flags, or returns "".
func (cfg *config) snapshotContradiction() string {
	switch {
	case cfg.restoreFrom != "" && cfg.recoverFrom != "":
		return "-restore-from and -recover-from together: restore a new store, or recover a damaged one"
	case cfg.snapshotEvery < 0:
		return fmt.Sprintf("-snapshot-every %v: want more than 0", cfg.snapshotEvery)
	case cfg.snapshotKeep < 0:
		return fmt.Sprintf("-snapshot-keep %d: want 1 or more", cfg.snapshotKeep)
	case cfg.snapshotDir == "" && (cfg.snapshotEvery != 0 || cfg.snapshotKeep != 0):
		return "-snapshot-every and -snapshot-keep go with -snapshot-dir"
	}
	return ""
}

// prepareStore opens the store file of cfg.dir: restored first from
// -restore-from, or recovered with -recover-from if it is damaged. A
// restore refuses a snapshot holding a value the layer serving kind could
// not read (servable).
func prepareStore(cfg config, kind apistore.Kind[json.RawMessage], stdout io.Writer, log *slog.Logger) (*boltstore.Store[json.RawMessage], error) {
	path := filepath.Join(cfg.dir, StoreFile)
	opts := []boltstore.Option{boltstore.WithLockTimeout(cfg.lockTimeout), boltstore.WithValueCheck(servable(kind))}
	switch {
	case cfg.restoreFrom != "":
		if err := restoreStore(path, cfg, opts, stdout, log); err != nil {
			return nil, err
		}
	case cfg.recoverFrom != "":
		return recoverStore(path, cfg, opts, stdout, log)
	}
	return openStore(cfg)
}

// servable is the check a restore runs on every value of a snapshot: what
// the layer serving kind reads of a stored value before every write to its
// key (the JSON codec, then kind's metadata), so that no value is restored
// that the store could then neither write nor delete.
func servable(kind apistore.Kind[json.RawMessage]) snapshot.ValueCheck {
	return snapshot.Decodes[json.RawMessage](store.JSON[json.RawMessage]{}, func(v json.RawMessage) error {
		_, err := kind.Meta(v)
		return err
	})
}

// restoreStore makes the store file at path from the snapshot file of
// -restore-from, or from the change log in its directory.
func restoreStore(path string, cfg config, opts []boltstore.Option, stdout io.Writer, log *slog.Logger) error {
	if fi, err := os.Stat(cfg.restoreFrom); err == nil && fi.IsDir() {
		return restoreFromLog(path, cfg, opts, stdout, log)
	}
	if cfg.restoreToRevision != 0 || !cfg.restoreToTime.IsZero() {
		return fmt.Errorf("-restore-to-revision and -restore-to-time restore from a change log: -restore-from %s is no directory", cfg.restoreFrom)
	}
	f, err := os.Open(cfg.restoreFrom)
	if err != nil {
		return fmt.Errorf("-restore-from: %w", err)
	}
	defer f.Close()
	restored, err := boltstore.Restore(path, f, opts...)
	if err != nil {
		return restoreError(cfg, err)
	}
	fmt.Fprintf(stdout, "convergestore: restored %s from %s: %d objects of revision %d, now at revision %d\n",
		path, cfg.restoreFrom, restored.Snapshot.Count, restored.Snapshot.Revision, restored.Revision)
	log.Info("store restored from a snapshot", "file", path, "snapshot", cfg.restoreFrom,
		"objects", restored.Snapshot.Count, "snapshot revision", restored.Snapshot.Revision, "revision", restored.Revision)
	return nil
}

// restoreError says why the restore of -restore-from made no store.
func restoreError(cfg config, err error) error {
	switch {
	case errors.Is(err, os.ErrExist):
		return fmt.Errorf("-restore-from makes a new store, and %s holds one already (serve it without -restore-from, or give another -dir): %w", cfg.dir, err)
	case errors.Is(err, snapshot.ErrUnservable):
		return fmt.Errorf("-restore-from %s holds what this server could not serve, and nothing was restored: %w", cfg.restoreFrom, err)
	}
	return fmt.Errorf("-restore-from %s: %w", cfg.restoreFrom, err)
}

// recoverStore opens the store file at path, recovering it from the
// snapshots of -recover-from if it is damaged.
func recoverStore(path string, cfg config, opts []boltstore.Option, stdout io.Writer, log *slog.Logger) (*boltstore.Store[json.RawMessage], error) {
	s, rec, err := boltstore.OpenOrRecover[json.RawMessage](path, cfg.recoverFrom, opts...)
	switch {
	case errors.Is(err, boltstore.ErrCorrupt) && errors.Is(err, snapshot.ErrIdentity):
		return nil, fmt.Errorf("the store file %s is damaged, was left as it is, and was not recovered from %s, which holds no snapshot known to be of its store; to restore a snapshot of another store (or when the damaged file's identity cannot be read), name its file: -recover-from FILE: %w", path, cfg.recoverFrom, err)
	case errors.Is(err, boltstore.ErrCorrupt):
		return nil, fmt.Errorf("the store file %s is damaged, was left as it is, and was not recovered from %s: %w", path, cfg.recoverFrom, err)
	case errors.Is(err, boltstore.ErrLocked):
		return nil, fmt.Errorf("the store file %s is held by another process (another convergestore serving %s?): %w", path, cfg.dir, err)
	case errors.Is(err, boltstore.ErrFormat):
		return nil, fmt.Errorf("%s is not a store file of this program, and was left as it is: %w", path, err)
	case err != nil:
		return nil, err
	}
	for _, skipped := range rec.Skipped {
		log.Warn("damaged snapshot passed over", "file", skipped.Path, "err", skipped.Err)
	}
	for _, above := range rec.Above {
		log.Warn("snapshot of this store above the damaged file's revision passed over: another history of it (its file put back from a copy?)",
			"file", above.Path, "revision", above.Info.Revision, "damaged file's revision", rec.LastRevision)
	}
	for _, other := range rec.Foreign {
		log.Info("snapshot of another store passed over", "file", other.Path, "identity", other.Info.Identity, "revision", other.Info.Revision)
	}
	if !rec.Recovered {
		return s, nil
	}
	lost := lostWrites(rec)
	fmt.Fprintf(stdout, "convergestore: recovered the damaged %s from %s (revision %d); the damaged file is %s; %s\n",
		path, rec.Snapshot, rec.Restored.Snapshot.Revision, rec.DamagedFile, lost)
	log.Warn("damaged store file recovered from a snapshot", "file", path, "damage", rec.Damage, "snapshot", rec.Snapshot,
		"snapshot revision", rec.Restored.Snapshot.Revision, "revision", rec.Restored.Revision, "damaged file", rec.DamagedFile, "lost", lost)
	return s, nil
}

// lostWrites says which writes of the damaged store a recovery lost.
func lostWrites(rec boltstore.Recovery) string {
	if !rec.SameStore() {
		damagedID := "cannot be read"
		if rec.Identity != "" {
			damagedID = "is " + rec.Identity
		}
		return fmt.Sprintf("the snapshot named is of store %q and the damaged file's identity %s: what the damaged store held is not compared, and its writes may all be lost", rec.Restored.Snapshot.Identity, damagedID)
	}
	from, through, ok := rec.Lost()
	switch {
	case !ok:
		return "the damaged file's revision cannot be read: the writes after the snapshot are lost"
	case from <= through:
		return fmt.Sprintf("revisions %d to %d are lost", from, through)
	}
	return "no revision is lost"
}

// addSaver adds to m, with -snapshot-dir, the runnable that saves the
// store's snapshots.
func addSaver(m *manager.Manager, s *boltstore.Store[json.RawMessage], cfg config, log *slog.Logger) error {
	if cfg.snapshotDir == "" {
		return nil
	}
	saver, err := snapshot.NewSaver(snapshot.Typed[json.RawMessage](s, nil), snapshot.SaverOptions{
		Dir: cfg.snapshotDir, Every: cfg.snapshotEvery, Keep: cfg.snapshotKeep, Logger: log,
	})
	if err != nil {
		return err
	}
	return m.Add(saver)
}
