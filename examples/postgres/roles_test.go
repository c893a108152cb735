package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
)

func intp(n int) *int { return &n }

// A role that does not exist is created with its mark as its comment and
// its memberships, in that order, in the transaction that creates it.
func TestAMissingRoleIsCreatedWithItsMarkAndMemberships(t *testing.T) {
	got := roleStatements("app", RoleSpec{Login: true, ConnectionLimit: intp(5), InRoles: []string{"writers", "readers"}}, roleState{}, "converge owner=o store=s")
	require.Equal(t, []string{
		`CREATE ROLE "app" LOGIN CONNECTION LIMIT 5`,
		`COMMENT ON ROLE "app" IS 'converge owner=o store=s'`,
		`GRANT "readers" TO "app"`,
		`GRANT "writers" TO "app"`,
	}, got)
}

// A role as its spec says needs no statement: a converged reconcile
// changes nothing in PostgreSQL.
func TestARoleAsItsSpecSaysNeedsNoStatement(t *testing.T) {
	cur := roleState{exists: true, login: false, connLimit: -1, inRoles: []string{"readers"}}
	require.Empty(t, roleStatements("app", RoleSpec{InRoles: []string{"readers"}}, cur, "mark"))
}

// A role that differs is altered, not created, and its memberships are made
// exactly the spec's: the missing granted, the others revoked; its comment
// is left as it is.
func TestARoleThatDiffersIsAlteredAndItsMembershipsMadeExact(t *testing.T) {
	cur := roleState{exists: true, login: true, connLimit: 1, inRoles: []string{"admins", "readers"}}
	got := roleStatements("app", RoleSpec{Login: true, ConnectionLimit: intp(10), InRoles: []string{"readers", "writers"}}, cur, "mark")
	require.Equal(t, []string{
		`ALTER ROLE "app" LOGIN CONNECTION LIMIT 10`,
		`GRANT "writers" TO "app"`,
		`REVOKE "admins" FROM "app"`,
	}, got)
}

// Only plain lower-case identifiers name roles and databases, and the
// system's names are never the operator's: anything else is an invalid
// spec, never quoted into DDL.
func TestNamesThatAreNotPlainIdentifiersOrAreReservedAreInvalid(t *testing.T) {
	for _, key := range []string{"roles/App", "roles/a-b", "roles/x;drop", "roles/", "roles/a/b", "roles/pg_monitor", "roles/postgres", "roles/public"} {
		_, err := nameOf(RolePrefix, key)
		require.ErrorIs(t, err, ErrInvalidSpec, key)
		require.ErrorIs(t, err, store.ErrInvalid, key)
	}
	name, err := nameOf(RolePrefix, "roles/app_1")
	require.NoError(t, err)
	require.Equal(t, "app_1", name)
	require.ErrorIs(t, validateRole("app", "operator", RoleSpec{InRoles: []string{"app"}}), ErrInvalidSpec)
	require.ErrorIs(t, validateRole("app", "operator", RoleSpec{ConnectionLimit: intp(-2)}), ErrInvalidSpec)
	require.ErrorIs(t, DatabaseSpec{Reclaim: "keep"}.validate(), ErrInvalidSpec)
	require.ErrorIs(t, DatabaseSpec{Extensions: []string{"x'y"}}.validate(), ErrInvalidSpec)
	require.NoError(t, DatabaseSpec{Owner: "app", Extensions: []string{"uuid-ossp"}, Reclaim: Delete}.validate())
}

// Text quoted into DDL cannot end its literal or its identifier.
func TestQuotingKeepsTextInsideItsLiteralAndIdentifier(t *testing.T) {
	require.Equal(t, `'it''s'`, literal("it's"))
	require.Equal(t, `"a""b"`, ident(`a"b`))
}
