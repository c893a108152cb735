package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// This file holds what the Role reconciler does in PostgreSQL: read a role
// from the catalog (pg_roles, the view of pg_authid, and pg_auth_members),
// and make it as its spec says.

// roleState is a role as the catalog shows it.
type roleState struct {
	exists    bool
	login     bool
	connLimit int
	inRoles   []string // sorted
	comment   string
	// fingerprint is everything a hand change can alter of the role
	// (roleFingerprintSQL), as the role listing reads it.
	fingerprint string
}

// roleQuery reads one role, its memberships sorted, and its fingerprint.
const roleQuery = `SELECT r.rolcanlogin, r.rolconnlimit, COALESCE(shobj_description(r.oid, 'pg_authid'), ''),
	ARRAY(SELECT g.rolname::text FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid WHERE m.member = r.oid ORDER BY 1),
	` + roleFingerprintSQL + `
	FROM pg_roles r WHERE r.rolname = $1`

// roleFingerprintSQL is the text of everything a hand change can alter of
// the role r (pg_roles): each attribute, its settings, and each
// membership with its options; the fingerprint the role drift source
// compares is its drift.Fingerprint. The listing and the reading of one
// role select this same expression, so they agree by construction. Only
// the password and the comment are left out: the one is not readable,
// the other is the mark, which no reconcile compares.
const roleFingerprintSQL = `concat_ws('|', r.rolsuper, r.rolinherit, r.rolcreaterole, r.rolcreatedb, r.rolcanlogin,
		r.rolreplication, r.rolbypassrls, r.rolconnlimit, COALESCE(extract(epoch FROM r.rolvaliduntil)::text, ''),
		COALESCE(r.rolconfig::text, ''),
		ARRAY(SELECT g.rolname::text || ':' || m.admin_option FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid
			WHERE m.member = r.oid ORDER BY 1)::text)`

// readRole returns the role name as the catalog has it.
func readRole(ctx context.Context, q execer, name string) (roleState, error) {
	st := roleState{exists: true}
	err := q.QueryRow(ctx, roleQuery, name).Scan(&st.login, &st.connLimit, &st.comment, &st.inRoles, &st.fingerprint)
	if errors.Is(err, pgx.ErrNoRows) {
		return roleState{}, nil
	}
	return st, err
}

// ensureRole makes the role name as spec says, in one transaction: created
// with comment as its comment if it does not exist, else altered where it
// differs, and its memberships made exactly spec.InRoles. A privileged role (refusePrivileged), as the role
// or among its memberships, is refused with an error matching
// ErrInvalidSpec before anything is changed.
func ensureRole(ctx context.Context, conn *pgx.Conn, name string, spec RoleSpec, comment string) error {
	return inTx(ctx, conn, func(tx pgx.Tx) error {
		if err := refusePrivileged(ctx, tx, "role", name); err != nil {
			return err
		}
		if err := refusePrivileged(ctx, tx, "role in inRoles", sortedSet(spec.InRoles)...); err != nil {
			return err
		}
		cur, err := readRole(ctx, tx, name)
		if err != nil {
			return err
		}
		for _, stmt := range roleStatements(name, spec, cur, comment) {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
}

// roleStatements returns the DDL that makes cur as spec says: none when it
// already is.
func roleStatements(name string, spec RoleSpec, cur roleState, comment string) []string {
	login := "NOLOGIN"
	if spec.Login {
		login = "LOGIN"
	}
	limit := strconv.Itoa(spec.connectionLimit())
	var out []string
	switch {
	case !cur.exists:
		out = append(out, fmt.Sprintf("CREATE ROLE %s %s CONNECTION LIMIT %s", ident(name), login, limit),
			fmt.Sprintf("COMMENT ON ROLE %s IS %s", ident(name), literal(comment)))
	case cur.login != spec.Login || cur.connLimit != spec.connectionLimit():
		out = append(out, fmt.Sprintf("ALTER ROLE %s %s CONNECTION LIMIT %s", ident(name), login, limit))
	}
	grant, revoke := membershipDiff(cur.inRoles, spec.InRoles)
	for _, g := range grant {
		out = append(out, fmt.Sprintf("GRANT %s TO %s", ident(g), ident(name)))
	}
	for _, g := range revoke {
		out = append(out, fmt.Sprintf("REVOKE %s FROM %s", ident(g), ident(name)))
	}
	return out
}

// membershipDiff returns the roles of want missing from have, and those
// of have that want does not list, each sorted and once.
func membershipDiff(have, want []string) (grant, revoke []string) {
	for _, w := range sortedSet(want) {
		if !slices.Contains(have, w) {
			grant = append(grant, w)
		}
	}
	for _, h := range sortedSet(have) {
		if !slices.Contains(want, h) {
			revoke = append(revoke, h)
		}
	}
	return grant, revoke
}

// sortedSet returns a sorted copy of names without repeats.
func sortedSet(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return slices.Compact(out)
}

// dropRole drops the role name, unless it is privileged (refusePrivileged):
// a role made privileged since the operator made it is left as it is.
func dropRole(ctx context.Context, conn *pgx.Conn, name string) error {
	err := refusePrivileged(ctx, conn, "role", name)
	if errors.Is(err, ErrInvalidSpec) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "DROP ROLE IF EXISTS "+ident(name))
	return err
}

// validateRole checks a Role's spec for the role name, self being the
// role the operator connects as: a role it never manages, nor grants.
func validateRole(name, self string, spec RoleSpec) error {
	if name == self {
		return fmt.Errorf("%w: role %s is the operator's own", ErrInvalidSpec, name)
	}
	if n := spec.ConnectionLimit; n != nil && (*n < -1 || *n > maxConnectionLimit) {
		return fmt.Errorf("%w: connectionLimit %d: want -1 (no limit) to %d", ErrInvalidSpec, *n, maxConnectionLimit)
	}
	if err := checkRoleNames("role in inRoles", spec.InRoles...); err != nil {
		return err
	}
	if slices.Contains(spec.InRoles, name) {
		return fmt.Errorf("%w: role %s cannot be a member of itself", ErrInvalidSpec, name)
	}
	if slices.Contains(spec.InRoles, self) {
		return fmt.Errorf("%w: role in inRoles %q is the operator's own", ErrInvalidSpec, self)
	}
	return nil
}

// privilegedQuery returns, for the first of the roles named in $1 that is
// privileged, its name and the privileged role it is or belongs to: a
// superuser, a role with REPLICATION, BYPASSRLS or CREATEROLE, a
// predefined role (pg_*), or the operator's own role or one of its groups
// (whose privileges are the operator's), directly or through any chain of
// memberships. pg_auth_members is walked by hand: pg_has_role holds every
// role for a superuser.
const privilegedQuery = `WITH RECURSIVE
	mine(oid) AS (SELECT oid FROM pg_roles WHERE rolname = current_user
		UNION SELECT m.roleid FROM pg_auth_members m JOIN mine ON m.member = mine.oid),
	up(name, oid) AS (SELECT rolname::text, oid FROM pg_roles WHERE rolname = ANY($1::text[])
		UNION SELECT up.name, m.roleid FROM pg_auth_members m JOIN up ON m.member = up.oid)
	SELECT up.name, r.rolname::text FROM up JOIN pg_roles r ON r.oid = up.oid
	WHERE r.rolsuper OR r.rolreplication OR r.rolbypassrls OR r.rolcreaterole OR r.rolname ~ '^pg_'
		OR r.oid IN (SELECT oid FROM mine)
	ORDER BY 1, 2 LIMIT 1`

// refusePrivileged returns an error matching ErrInvalidSpec if one of
// names is privileged (see privilegedQuery): the operator never alters,
// grants or drops what holds more than what it makes.
func refusePrivileged(ctx context.Context, q execer, what string, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	var name, via string
	err := q.QueryRow(ctx, privilegedQuery, names).Scan(&name, &via)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return err
	case name == via:
		return fmt.Errorf("%w: %s %s is privileged (a superuser, REPLICATION, BYPASSRLS or CREATEROLE role, a predefined role, or the operator's own or one of its groups)", ErrInvalidSpec, what, name)
	}
	return fmt.Errorf("%w: %s %s is privileged: it is a member of %s (a superuser, REPLICATION, BYPASSRLS or CREATEROLE role, a predefined role, or the operator's own or one of its groups)", ErrInvalidSpec, what, name, via)
}
