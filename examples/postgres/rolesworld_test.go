package main

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/drift"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
)

// listedFingerprint returns the fingerprint the role listing gives the
// role name, read with psql as a person would.
func listedFingerprint(t *testing.T, e *pgEnv, name string) string {
	t.Helper()
	return drift.Fingerprint(e.query("postgres", "SELECT "+roleFingerprintSQL+" FROM pg_roles r WHERE r.rolname = '"+name+"'"))
}

// Every change a person can make to a role with psql — each attribute,
// a setting, a membership granted, its admin option, a membership revoked
// — changes the fingerprint the role drift source lists, so the next poll
// wakes its key; and the listing (World.List) and the reading of one role
// (World.Observe, after the kit's own writes) give the same fingerprint,
// so a role as the kit left it wakes nothing.
func TestEveryHandChangeToARoleChangesItsListedFingerprint(t *testing.T) {
	e := newPGEnv(t)
	e.query("postgres", "CREATE ROLE subject NOLOGIN; CREATE ROLE g1")
	conn, err := pgx.Connect(t.Context(), e.pg.DSN("postgres"))
	require.NoError(t, err)
	defer conn.Close(t.Context())
	agree := func(what string) string {
		listed := listedFingerprint(t, e, "subject")
		cur, err := readRole(t.Context(), conn, "subject")
		require.NoError(t, err)
		require.Equal(t, listed, drift.Fingerprint(cur.fingerprint), "%s: the listing and the reading of the role differ", what)
		return listed
	}
	prev := agree("created")
	for _, change := range []string{
		"ALTER ROLE subject LOGIN", "ALTER ROLE subject CONNECTION LIMIT 3", "ALTER ROLE subject CREATEDB",
		"ALTER ROLE subject NOINHERIT", "ALTER ROLE subject CREATEROLE", "ALTER ROLE subject REPLICATION",
		"ALTER ROLE subject BYPASSRLS", "ALTER ROLE subject SUPERUSER", "ALTER ROLE subject VALID UNTIL '2031-01-01'",
		"ALTER ROLE subject SET work_mem = '8MB'", "GRANT g1 TO subject", "GRANT g1 TO subject WITH ADMIN OPTION",
		"REVOKE ADMIN OPTION FOR g1 FROM subject", "REVOKE g1 FROM subject", "ALTER ROLE subject NOSUPERUSER",
	} {
		e.query("postgres", change)
		now := agree(change)
		require.NotEqual(t, prev, now, "%s left the role's fingerprint as it was: no poll finds it", change)
		prev = now
	}
}

// A membership revoked with psql within a millisecond of the operator
// creating the role again — between the kit's create and its look
// afterwards — is granted again by the next drift poll: the kit does not
// take the role it found for the role it made.
func TestARevokeLandingRightAfterTheOperatorsCreateIsPutBackByTheNextPoll(t *testing.T) {
	e := newPGEnv(t)
	cfg := e.daemonConfig()
	e.startInProcess(cfg)
	put(t, e.stores.Roles, "roles/app", RoleSpec{})
	put(t, e.stores.Roles, "roles/drifter", RoleSpec{InRoles: []string{"app"}})
	externaltest.WaitConverged(t, e.stores.Roles, convergeLimit, "roles/app", "roles/drifter")
	for range 3 {
		e.query("postgres", "DROP ROLE drifter")
		e.query("postgres", `DO $$ BEGIN
			LOOP EXIT WHEN EXISTS (SELECT FROM pg_roles WHERE rolname = 'drifter'); PERFORM pg_sleep(0.001); END LOOP;
			EXECUTE 'REVOKE app FROM drifter'; END $$`)
		waitFor(t, "the revoked membership granted again", cfg.DriftInterval+20*time.Second, func() bool {
			return e.query("postgres", roleRow("drifter")) == "f|-1|app"
		})
	}
}

// A role that existed before the operator is managed as it is, unmarked,
// and left alone while it does not drift: no poll wakes it (the kit lists
// it by name), and it is never taken for the operator's (it keeps no
// mark, so neither prune nor a deletion drops it).
func TestARoleThatExistedBeforeTheOperatorIsWokenByNoPollWhileUnchanged(t *testing.T) {
	e := newPGEnv(t)
	var counts reconcileCounts
	cfg := e.daemonConfig()
	cfg.Observe = counts.observe
	e.query("postgres", "CREATE ROLE old LOGIN CONNECTION LIMIT 2")
	e.startInProcess(cfg)
	put(t, e.stores.Roles, "roles/old", RoleSpec{Login: true, ConnectionLimit: intp(2)})
	externaltest.WaitConverged(t, e.stores.Roles, convergeLimit, "roles/old")
	pause(t, 2*cfg.DriftInterval)
	before := counts.of("roles", "roles/old")
	pause(t, 5*cfg.DriftInterval)
	require.Equal(t, before, counts.of("roles", "roles/old"), "polls woke an unchanged role")
	require.Empty(t, e.query("postgres", "SELECT COALESCE(shobj_description(oid, 'pg_authid'), '') FROM pg_roles WHERE rolname = 'old'"))

	e.query("postgres", "ALTER ROLE old NOLOGIN")
	waitFor(t, "the altered role put back", cfg.DriftInterval+20*time.Second, func() bool { return e.query("postgres", roleRow("old")) == "t|2|" })
}
