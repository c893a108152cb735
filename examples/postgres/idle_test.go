package main

import (
	"testing"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/stretchr/testify/require"
)

// TestAConvergedOperatorWritesNothing: once the operator's roles and
// databases are in place in a real PostgreSQL, the store stops changing
// (its writes that would change nothing are not stored, so they wake
// nothing), and reconciling every role and database again writes
// nothing, though each reconcile compares with PostgreSQL afresh. Real
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

	revision := func() int64 {
		rev, err := e.stores.Roles.Revision(ctx)
		require.NoError(t, err)
		return rev
	}
	settled := false
	for range 20 {
		rev := revision()
		require.NoError(t, p.op.Roles.WaitForRevision(ctx, rev))
		require.NoError(t, p.op.Databases.WaitForRevision(ctx, rev))
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
	p.op.Roles.EnqueueAll()
	p.op.Databases.EnqueueAll()
	waitFor(t, "the roles reconciled again", convergeLimit, reconciledSince(p.op.Roles, at))
	waitFor(t, "the database reconciled again", convergeLimit, reconciledSince(p.op.Databases, at))
	require.Equal(t, rev, revision(), "reconciling a converged operator's objects again wrote to the store")
}
