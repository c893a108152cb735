package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// These tests run the operator against a real PostgreSQL (Debian's
// postgresql, a private cluster per test) and check the catalog with psql.

// converge bounds the waits for the operator to act: generous, since
// nothing here asserts a duration.
const convergeLimit = 60 * time.Second

// Each kind is created and then altered in PostgreSQL as its spec says,
// its status records what was seen for the latest generation, and an
// object the server refuses has its own error in its status until what it
// needs exists.
func TestEachKindIsCreatedAndAlteredInPostgreSQL(t *testing.T) {
	e := newPGEnv(t)
	e.startInProcess(e.daemonConfig())
	ctx := t.Context()
	put(t, e.stores.Roles, "roles/readers", RoleSpec{})
	put(t, e.stores.Roles, "roles/app", RoleSpec{Login: true, ConnectionLimit: intp(5), InRoles: []string{"readers"}})
	put(t, e.stores.Databases, "databases/appdb", DatabaseSpec{Owner: "app", Extensions: []string{"pgcrypto"}, Reclaim: Delete})
	externaltest.WaitConverged(t, e.stores.Roles, convergeLimit, "roles/readers", "roles/app")
	externaltest.WaitConverged(t, e.stores.Databases, convergeLimit, "databases/appdb")
	require.Equal(t, "t|5|readers", e.query("postgres", roleRow("app")))
	require.Equal(t, "app", e.query("postgres", "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'appdb'"))
	require.Equal(t, "pgcrypto", e.query("appdb", "SELECT extname FROM pg_extension WHERE extname <> 'plpgsql'"))
	mark, ok := external.ParseMark(e.query("postgres", "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = 'appdb'"))
	require.True(t, ok, "the database carries the operator's mark")
	require.Equal(t, DatabaseOwner, mark.Owner)
	require.Equal(t, "databases/appdb", mark.Key)
	role, err := e.stores.Roles.Get(ctx, "roles/app")
	require.NoError(t, err)
	require.Equal(t, RoleStatus{Exists: true, Login: true, ConnectionLimit: 5, InRoles: []string{"readers"}, Created: true,
		External: external.Record{Name: "app", Fingerprint: listedFingerprint(t, e, "app")}}, role.Value.Status)

	put(t, e.stores.Roles, "roles/app", RoleSpec{Login: false, ConnectionLimit: intp(10)})
	put(t, e.stores.Databases, "databases/appdb", DatabaseSpec{Owner: "readers", Reclaim: Retain})
	externaltest.WaitConverged(t, e.stores.Roles, convergeLimit, "roles/app")
	externaltest.WaitConverged(t, e.stores.Databases, convergeLimit, "databases/appdb")
	require.Equal(t, "f|10|", e.query("postgres", roleRow("app")))
	require.Equal(t, "readers", e.query("postgres", "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'appdb'"))
	require.Empty(t, e.query("appdb", "SELECT extname FROM pg_extension WHERE extname <> 'plpgsql'"), "the extension the spec dropped is dropped")
	mark, _ = external.ParseMark(e.query("postgres", "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = 'appdb'"))
	require.Equal(t, DatabaseOwner, mark.Owner, "reclaim retain: marked while desired, unmarked when its Database goes")

	// A role whose membership names a role that does not exist: its own
	// error, until that role exists.
	put(t, e.stores.Roles, "roles/late", RoleSpec{InRoles: []string{"later"}})
	externaltest.WaitFor(t, e.stores.Roles, "roles/late", convergeLimit, "roles/late's error in its status", func(objs map[string]store.Object[*Role]) bool {
		obj, ok := objs["roles/late"]
		if !ok {
			return false
		}
		c, _ := resource.FindCondition(obj.Value.Conditions, external.ConditionSynced)
		return strings.Contains(c.Message, `"later" does not exist`)
	})
	put(t, e.stores.Roles, "roles/later", RoleSpec{})
	externaltest.WaitConverged(t, e.stores.Roles, convergeLimit, "roles/late")
	require.Equal(t, "f|-1|later", e.query("postgres", roleRow("late")))

	// Backups: a schedule backs up at once, then at its slots; a backup
	// made by hand runs once; each dump passes pg_restore --list.
	e.query("appdb", "CREATE TABLE t AS SELECT g AS n FROM generate_series(1, 1000) g")
	put(t, e.stores.Schedules, "backupschedules/appdb", BackupScheduleSpec{Database: "appdb", Schedule: "0 3 * * *", KeepSucceeded: 2})
	put(t, e.stores.Backups, "backups/by-hand", BackupSpec{Database: "appdb"})
	externaltest.WaitConverged(t, e.stores.Backups, convergeLimit, "backups/by-hand")
	externaltest.WaitFor(t, e.stores.Schedules, "backupschedules/appdb", convergeLimit, "the schedule's first backup", func(objs map[string]store.Object[*BackupSchedule]) bool {
		obj, ok := objs["backupschedules/appdb"]
		return ok && obj.Value.Status.LastSucceeded != ""
	})
	sched, err := e.stores.Schedules.Get(ctx, "backupschedules/appdb")
	require.NoError(t, err)
	for _, key := range []string{"backups/by-hand", sched.Value.Status.LastSucceeded} {
		b, err := e.stores.Backups.Get(ctx, key)
		require.NoError(t, err)
		res := b.Value.Status.Dump.Result
		require.True(t, res.OK, key)
		require.Positive(t, res.Entries, key)
		requireRestorable(t, e, res.File)
	}
	put(t, e.stores.Schedules, "backupschedules/appdb", BackupScheduleSpec{Database: "appdb", Schedule: "30 4 * * *", KeepSucceeded: 2})
	externaltest.WaitConverged(t, e.stores.Schedules, convergeLimit, "backupschedules/appdb")
	sched, err = e.stores.Schedules.Get(ctx, "backupschedules/appdb")
	require.NoError(t, err)
	require.Equal(t, 4, sched.Value.Status.NextSlot.Hour())
	require.Equal(t, 30, sched.Value.Status.NextSlot.Minute())
}

// A role altered or dropped with psql is put back, and a database dropped
// by hand is created again, by the drift sources' next poll.
func TestDriftMadeWithPsqlIsHealedWithinADriftInterval(t *testing.T) {
	e := newPGEnv(t)
	cfg := e.daemonConfig()
	e.startInProcess(cfg)
	put(t, e.stores.Roles, "roles/app", RoleSpec{Login: true, ConnectionLimit: intp(5)})
	put(t, e.stores.Roles, "roles/drifter", RoleSpec{InRoles: []string{"app"}})
	put(t, e.stores.Databases, "databases/appdb", DatabaseSpec{Owner: "app", Reclaim: Delete})
	externaltest.WaitConverged(t, e.stores.Roles, convergeLimit, "roles/app", "roles/drifter")
	externaltest.WaitConverged(t, e.stores.Databases, convergeLimit, "databases/appdb")
	// One drift interval, plus the poll and the reconcile: the bound says
	// when to give up, not how fast it must be.
	within := cfg.DriftInterval + 20*time.Second

	e.query("postgres", "ALTER ROLE app NOLOGIN CONNECTION LIMIT 1")
	waitFor(t, "the altered role put back", within, func() bool { return e.query("postgres", roleRow("app")) == "t|5|" })

	e.query("postgres", "DROP DATABASE appdb")
	waitFor(t, "the dropped database created again", within, func() bool {
		return e.query("postgres", "SELECT count(*) FROM pg_database WHERE datname = 'appdb'") == "1"
	})
	e.query("postgres", "DROP ROLE drifter")
	waitFor(t, "the dropped role created again", within, func() bool { return e.query("postgres", roleRow("drifter")) == "f|-1|app" })
	e.query("postgres", "REVOKE app FROM drifter")
	waitFor(t, "the revoked membership granted again", within, func() bool { return e.query("postgres", roleRow("drifter")) == "f|-1|app" })
}

// A database the operator created and someone dropped before the next
// poll is absent at both polls around it; it is created again all the
// same, because the reconciler told the drift source what it made. And
// what the reconcilers tell the sources is what the sources list: once
// converged, polls wake no role or database.
func TestADatabaseCreatedAndDroppedBeforeTheNextPollIsCreatedAgain(t *testing.T) {
	e := newPGEnv(t)
	var log reconcileLog
	cfg := e.daemonConfig()
	cfg.DriftInterval = 5 * time.Second // the drop comes well before the next poll
	cfg.Observe = log.observe
	e.startInProcess(cfg)
	put(t, e.stores.Roles, "roles/app", RoleSpec{Login: true, ConnectionLimit: intp(5)})
	put(t, e.stores.Roles, "roles/member", RoleSpec{InRoles: []string{"app"}})
	put(t, e.stores.Databases, "databases/flash", DatabaseSpec{Owner: "app", Reclaim: Delete})
	externaltest.WaitConverged(t, e.stores.Roles, convergeLimit, "roles/app", "roles/member")
	externaltest.WaitConverged(t, e.stores.Databases, convergeLimit, "databases/flash")
	e.query("postgres", "DROP DATABASE flash")
	waitFor(t, "the dropped database created again", cfg.DriftInterval+20*time.Second, func() bool {
		return e.query("postgres", "SELECT count(*) FROM pg_database WHERE datname = 'flash'") == "1"
	})
	externaltest.WaitConverged(t, e.stores.Databases, convergeLimit, "databases/flash")

	// Two polls, each proven by a role altered by hand and put back: they
	// wake that role alone.
	from := time.Now()
	for range 2 {
		e.query("postgres", "ALTER ROLE app CONNECTION LIMIT 1")
		waitFor(t, "the altered role put back", cfg.DriftInterval+20*time.Second, func() bool {
			return e.query("postgres", roleRow("app")) == "t|5|"
		})
	}
	waitFor(t, "the put-backs recorded", convergeLimit, func() bool {
		return log.startedBetween(from, time.Now())["roles roles/app"] >= 2
	})
	require.Equal(t, map[string]int{"roles roles/app": 2}, log.startedBetween(from, time.Now()))
}

// roleRow selects a role's login, connection limit and memberships.
func roleRow(name string) string {
	return `SELECT r.rolcanlogin, r.rolconnlimit, COALESCE(string_agg(g.rolname, ',' ORDER BY g.rolname), '')
		FROM pg_roles r LEFT JOIN pg_auth_members m ON m.member = r.oid LEFT JOIN pg_roles g ON g.oid = m.roleid
		WHERE r.rolname = '` + name + `' GROUP BY 1, 2`
}

// put writes spec at key.
func put[Spec, Status any](t *testing.T, s store.Store[*resource.Resource[Spec, Status]], key string, spec Spec) {
	t.Helper()
	_, err := resource.PutSpec(t.Context(), s, key, spec)
	require.NoError(t, err)
}

// requireRestorable checks a dump with pg_restore --list, independently
// of the operator's own check.
func requireRestorable(t *testing.T, e *pgEnv, file string) {
	t.Helper()
	require.True(t, filepath.IsAbs(file), file)
	out, err := exec.Command(filepath.Join(e.pg.BinDir(), "pg_restore"), "--list", file).CombinedOutput()
	require.NoError(t, err, "pg_restore --list %s: %s", file, out)
	require.Contains(t, string(out), "TABLE public t ")
}
