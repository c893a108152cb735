package main

import (
	"context"
	"testing"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// TestAConvergedOperatorWritesNothing: once the operator's roles and
// databases are in place in a real PostgreSQL, and a backup schedule's
// first backup and a backup made by hand have succeeded, the store stops
// changing (its writes that would change nothing are not stored, so they
// wake nothing), and reconciling every role, database, schedule and
// backup again writes nothing, though each reconcile compares with
// PostgreSQL and the backup files afresh (requireWritesNothing). Restores,
// which need a WAL archive, are checked so in
// TestAPointInTimeRestoreHoldsTheTransactionBeforeItsTimeAndNotTheOneAfter.
func TestAConvergedOperatorWritesNothing(t *testing.T) {
	e := newPGEnv(t)
	p := e.startInProcess(e.daemonConfig())
	put(t, e.stores.Roles, "roles/readers", RoleSpec{})
	put(t, e.stores.Roles, "roles/app", RoleSpec{Login: true, ConnectionLimit: intp(5), InRoles: []string{"readers"}})
	put(t, e.stores.Databases, "databases/appdb", DatabaseSpec{Owner: "app", Extensions: []string{"pgcrypto"}, Reclaim: Delete})
	externaltest.WaitConverged(t, e.stores.Roles, convergeLimit, "roles/readers", "roles/app")
	externaltest.WaitConverged(t, e.stores.Databases, convergeLimit, "databases/appdb")
	put(t, e.stores.Schedules, "backupschedules/appdb", BackupScheduleSpec{Database: "appdb", Schedule: "0 3 1 1 *", KeepSucceeded: 2})
	put(t, e.stores.Backups, "backups/by-hand", BackupSpec{Database: "appdb"})
	externaltest.WaitConverged(t, e.stores.Backups, convergeLimit, "backups/by-hand")
	externaltest.WaitFor(t, e.stores.Schedules, "backupschedules/appdb", convergeLimit, "the schedule's first backup", func(objs map[string]store.Object[*BackupSchedule]) bool {
		obj, ok := objs["backupschedules/appdb"]
		return ok && obj.Value.Status.LastSucceeded != ""
	})
	externaltest.WaitConverged(t, e.stores.Schedules, convergeLimit, "backupschedules/appdb")
	requireWritesNothing(t, e, map[string]converging{"roles": p.op.Roles, "databases": p.op.Databases,
		"schedules": p.op.Schedules, "backups": p.op.Backups})
}

// converging is what requireWritesNothing needs of a controller.
type converging interface {
	WaitForRevision(context.Context, int64) error
	EnqueueAll()
	Snapshot() []reconcile.KeyState
}

// requireWritesNothing requires e's store to settle once controllers
// have reconciled every change (within a few rounds of WaitForRevision),
// and reconciling every key of theirs again to write nothing. Real time
// and a real server: reconciletest's CheckIdle, which runs on a fake
// clock, cannot drive the operator; this is its check, by revisions.
func requireWritesNothing(t *testing.T, e *pgEnv, controllers map[string]converging) {
	t.Helper()
	ctx := t.Context()
	revision := func() int64 {
		rev, err := e.stores.Raw.Revision(ctx)
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
	reconciledSince := func(c converging, at time.Time) func() bool {
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
