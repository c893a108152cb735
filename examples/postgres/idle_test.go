package main

import (
	"context"
	"testing"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/stretchr/testify/require"
)

// TestAConvergedOperatorWritesNothing: once the operator's roles and
// databases are in place in a real PostgreSQL, and a backup schedule's
// first backup and a backup made by hand have succeeded, the store stops
// changing (its writes that would change nothing are not stored, so they
// wake nothing), and reconciling every role, database, schedule and
// backup again writes nothing, though each reconcile compares with
// PostgreSQL and the backup files afresh. Restores, which need a WAL
// archive, are left to their own tests. Real
// time and a real server: reconciletest's CheckIdle, which runs on a fake
// clock, cannot drive it; this is its check, by revisions.
func TestAConvergedOperatorWritesNothing(t *testing.T) {
	e := newPGEnv(t)
	p := e.startInProcess(e.daemonConfig())
	ctx := t.Context()
	put(t, e.stores.Roles, "roles/readers", RoleSpec{})
	put(t, e.stores.Roles, "roles/app", RoleSpec{Login: true, ConnectionLimit: intp(5), InRoles: []string{"readers"}})
	put(t, e.stores.Databases, "databases/appdb", DatabaseSpec{Owner: "app", Extensions: []string{"pgcrypto"}, Reclaim: Delete})
	waitConverged(t, e.stores.Roles, convergeLimit, "roles/readers", "roles/app")
	waitConverged(t, e.stores.Databases, convergeLimit, "databases/appdb")
	put(t, e.stores.Schedules, "backupschedules/appdb", BackupScheduleSpec{Database: "appdb", Schedule: "0 3 1 1 *", KeepSucceeded: 2})
	put(t, e.stores.Backups, "backups/by-hand", BackupSpec{Database: "appdb"})
	waitConverged(t, e.stores.Backups, convergeLimit, "backups/by-hand")
	waitFor(t, "the schedule's first backup", convergeLimit, func() bool {
		obj, err := e.stores.Schedules.Get(ctx, "backupschedules/appdb")
		return err == nil && obj.Value.Status.LastSucceeded != ""
	})
	waitConverged(t, e.stores.Schedules, convergeLimit, "backupschedules/appdb")
	type converging interface {
		WaitForRevision(context.Context, int64) error
		EnqueueAll()
		Snapshot() []reconcile.KeyState
	}
	controllers := map[string]converging{"roles": p.op.Roles, "databases": p.op.Databases,
		"schedules": p.op.Schedules, "backups": p.op.Backups}

	revision := func() int64 {
		rev, err := e.stores.Roles.Revision(ctx)
		require.NoError(t, err)
		return rev
	}
	settled := false
	for range 20 {
		rev := revision()
		for _, c := range controllers {
			require.NoError(t, c.WaitForRevision(ctx, rev))
		}
		if revision() == rev {
			settled = true
			break
		}
	}
	require.True(t, settled, "the store kept changing after the operator converged")

	rev := revision()
	// reconciledSince reports whether every key of c was reconciled since
	// at and none is waiting or being reconciled.
	reconciledSince := func(c interface{ Snapshot() []reconcile.KeyState }, at time.Time) func() bool {
		return func() bool {
			for _, k := range c.Snapshot() {
				if k.State == queue.Waiting || k.State == queue.Processing || k.LastAt.Before(at) {
					return false
				}
			}
			return true
		}
	}
	at := time.Now()
	for _, c := range controllers {
		c.EnqueueAll()
	}
	for name, c := range controllers {
		waitFor(t, "the "+name+" reconciled again", convergeLimit, reconciledSince(c, at))
	}
	require.Equal(t, rev, revision(), "reconciling a converged operator's objects again wrote to the store")
}
