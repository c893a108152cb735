package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/converge-go/converge/examples/postgres/internal/cluster"
)

// This file holds the demo's story of a backup that counts only once
// restored: a base backup beside the WAL archive, verified by its restore
// drill before it is Succeeded, and a Restore to an instant between two
// transactions.

// archiveDir and restoreDir are the demo's WAL archive and restore
// directory, in the cluster's directory (its server user's).
func (s *story) archiveDir() string { return filepath.Join(s.pg.Dir(), "archive") }
func (s *story) restoreDir() string { return filepath.Join(s.pg.Dir(), "restores") }

// makeArchive makes the WAL archive, the server user's.
func (s *story) makeArchive() error {
	cred, err := cluster.Credential("")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.archiveDir(), 0o700); err != nil {
		return err
	}
	return chown(s.archiveDir(), cred)
}

func (s *story) restored(ctx context.Context) error {
	s.say.Say("— a backup counts only once restored: a base backup, its drill, and a point-in-time restore")
	if err := putSpec(ctx, s, s.stores.Backups, "backups/verified", BackupSpec{Database: "appdb", Method: MethodBase}); err != nil {
		return err
	}
	if err := converge(ctx, s.stores.Backups, "backups/verified"); err != nil {
		return err
	}
	obj, err := s.stores.Backups.Get(ctx, "backups/verified")
	if err != nil {
		return err
	}
	b := obj.Value.Status.Dump.Result.Base
	s.say.Say("backups/verified: %s after its restore drill: a scratch cluster restored it and the WAL archive to restore point %s (%s) in %v and held appdb's %d rows and checksum as recorded",
		obj.Value.Status.Phase, b.RestorePoint, b.RestorePointTime.Format(time.RFC3339), time.Duration(b.RestoreMillis)*time.Millisecond, b.Rows)
	at, err := s.twoOrders(ctx)
	if err != nil {
		return err
	}
	if err := putSpec(ctx, s, s.stores.Restores, "restores/before_second", RestoreSpec{Time: at}); err != nil {
		return err
	}
	if err := converge(ctx, s.stores.Restores, "restores/before_second"); err != nil {
		return err
	}
	r, err := s.stores.Restores.Get(ctx, "restores/before_second")
	if err != nil {
		return err
	}
	res := r.Value.Status.Run.Result
	ids, err := s.restoredIDs(ctx, res.Port)
	if err != nil {
		return err
	}
	if ids != "20001" {
		return storyErr("the restored cluster holds orders %s beyond 20000, want 20001 alone", ids)
	}
	s.say.Say("restores/before_second: a new cluster in %s on 127.0.0.1:%d holds order 20001, not 20002", res.DataDir, res.Port)
	return s.deleteRestore(ctx, "restores/before_second")
}

// twoOrders commits two orders and returns an instant between them.
func (s *story) twoOrders(ctx context.Context) (time.Time, error) {
	if _, err := s.psql(ctx, "appdb", "INSERT INTO orders VALUES (20001, 'first')"); err != nil {
		return time.Time{}, err
	}
	out, err := s.psql(ctx, "appdb", `SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`)
	if err != nil {
		return time.Time{}, err
	}
	at, err := time.Parse(time.RFC3339Nano, out)
	if err != nil {
		return time.Time{}, err
	}
	_, err = s.psql(ctx, "appdb", "INSERT INTO orders VALUES (20002, 'second')")
	s.say.Say("psql: order 20001 committed, then order 20002; the instant between them: %s", at.Format(time.RFC3339Nano))
	return at, err
}

// restoredIDs lists the orders beyond 20000 in the restored cluster on
// port.
func (s *story) restoredIDs(ctx context.Context, port int) (string, error) {
	out, err := s.pg.PsqlAt(ctx, port, "appdb", "SELECT string_agg(id::text, ',' ORDER BY id) FROM orders WHERE id > 20000")
	return strings.TrimSpace(out), err
}

// deleteRestore deletes a Restore and waits until it is gone: its cluster
// stopped and removed.
func (s *story) deleteRestore(ctx context.Context, key string) error {
	obj, err := s.stores.Restores.Get(ctx, key)
	if err != nil {
		return err
	}
	if _, err := s.stores.Restores.Delete(ctx, key, obj.Revision); err != nil {
		return err
	}
	err = until(ctx, stepLimit, key+" gone", func() (bool, error) {
		_, err := s.stores.Restores.Get(ctx, key)
		return err != nil, nil
	})
	if err == nil {
		s.say.Say("delete %s: its cluster stopped and removed", key)
	}
	return err
}
