package main

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/converge-go/converge/reconcile/kit/drift"
	"github.com/converge-go/converge/reconcile/kit/external"
)

// This file holds the Role kind's domain as reconcile/kit/external takes
// it: how to observe, create, alter and drop a role, and list the roles
// with their marks. The kit does the rest: the finalizer, crash-safe
// creates, drift, prune, errors sorted into conditions. Every name is
// checked before it becomes SQL (nameOf, validateRole), every name is
// quoted (ident), and a privileged role, as the role or among its
// memberships, is refused (refusePrivileged) as an invalid spec, which
// the kit makes terminal.

// roleWorld is the Role kind's external.World over PostgreSQL.
type roleWorld struct {
	pg    *pg
	marks *marks
}

func (w *roleWorld) world() external.World[RoleSpec, RoleStatus] {
	return external.World[RoleSpec, RoleStatus]{Observe: w.observe, Create: w.create, Update: w.update, Delete: w.delete, List: w.list}
}

// roleOptions are the Role kind's options of reconcile/kit/external, but
// for the process's: its dependency, intervals and logger.
func roleOptions() external.Options[RoleSpec, RoleStatus] {
	return external.Options[RoleSpec, RoleStatus]{Name: RoleOwner, Prefix: RolePrefix, Finalizer: RoleFinalizer,
		Record:       func(st *RoleStatus) *external.Record { return &st.External },
		ExternalName: roleName, Classify: roleClass}
}

// roleName is the Role kind's external.Options.ExternalName: the role is
// named after its key ("roles/app" is app), checked where it is used.
func roleName(key string, _ RoleSpec) string { return strings.TrimPrefix(key, RolePrefix) }

// roleClass sorts the World's errors: an invalid spec is the object's
// fault (terminal until it changes); a server down is marked by blame.
func roleClass(err error) external.Class {
	if errors.Is(err, ErrInvalidSpec) {
		return external.Rejected
	}
	return external.Transient
}

// check returns the role of d's key (never d.Name: a name recorded in
// status is not trusted), or an error matching ErrInvalidSpec
// if its key or spec is one the operator refuses.
func (w *roleWorld) check(d external.Desired[RoleSpec]) (string, error) {
	name, err := nameOf(RolePrefix, d.Key)
	if err == nil {
		err = validateRole(name, w.pg.user, d.Spec)
	}
	return name, err
}

// validate is the kit's Options.Validate: the key and spec as check
// refuses them, and a role or membership that is privileged in the
// server now, before a reconcile asks PostgreSQL anything else.
func (w *roleWorld) validate(ctx context.Context, key string, spec RoleSpec) error {
	name, err := w.check(external.Desired[RoleSpec]{Key: key, Spec: spec})
	if err != nil {
		return err
	}
	return w.pg.session(ctx, key, func(conn *pgx.Conn) error {
		return errors.Join(refusePrivileged(ctx, conn, "role", name),
			refusePrivileged(ctx, conn, "role in inRoles", sortedSet(spec.InRoles)...))
	})
}

// observe reads the role of d's key: Absent, UpToDate, or Differs when a
// statement would change it. The spec becomes SQL only in Create and
// Update, which check it (ensure); Observe runs when a Role is deleted
// too, whatever its spec, so it refuses nothing: an invalid name was
// never made, and reads as Absent.
func (w *roleWorld) observe(ctx context.Context, d external.Desired[RoleSpec]) (external.Observation[RoleStatus], error) {
	var obs external.Observation[RoleStatus]
	name, err := nameOf(RolePrefix, d.Key)
	if err != nil {
		return obs, nil
	}
	var cur roleState
	err = w.pg.session(ctx, d.Key, func(conn *pgx.Conn) (err error) {
		cur, err = readRole(ctx, conn, name)
		return err
	})
	if err != nil || !cur.exists {
		return obs, err
	}
	created, err := w.ours(ctx, cur.comment)
	if err != nil {
		return obs, err
	}
	obs = external.Observation[RoleStatus]{State: external.UpToDate,
		Status:      RoleStatus{Exists: true, Login: cur.login, ConnectionLimit: cur.connLimit, InRoles: cur.inRoles, Created: created},
		Fingerprint: drift.Fingerprint(cur.fingerprint)}
	if len(roleStatements(name, d.Spec, cur, "")) > 0 {
		obs.State = external.Differs
	}
	return obs, nil
}

// create makes the role with d's mark as its comment (ensureRole: one
// transaction, so a role exists with its mark or not at all).
func (w *roleWorld) create(ctx context.Context, d external.Desired[RoleSpec]) (string, error) {
	return "", w.ensure(ctx, d, d.Mark.String())
}

// update alters the role d names as its spec says; its comment is left.
func (w *roleWorld) update(ctx context.Context, d external.Desired[RoleSpec], _ external.Observation[RoleStatus]) error {
	return w.ensure(ctx, d, "")
}

// ensure makes or alters the role of d's key as its spec says, once the
// key and spec are checked and neither the role nor a role it joins is
// privileged.
func (w *roleWorld) ensure(ctx context.Context, d external.Desired[RoleSpec], comment string) error {
	name, err := w.check(d)
	if err != nil {
		return err
	}
	return w.pg.session(ctx, d.Key, func(conn *pgx.Conn) error {
		err := errors.Join(refusePrivileged(ctx, conn, "role", name),
			refusePrivileged(ctx, conn, "role in inRoles", sortedSet(d.Spec.InRoles)...))
		if err != nil {
			return err
		}
		return ensureRole(ctx, conn, name, d.Spec, comment)
	})
}

// delete drops the role of d's key if the operator made it from this
// store (its mark), unless it is privileged now; any other role is left
// as it is, and so is a name the operator never makes. The role is the
// key's, never d.Name: a name recorded in status is not trusted.
func (w *roleWorld) delete(ctx context.Context, d external.Desired[RoleSpec]) error {
	name, err := nameOf(RolePrefix, d.Key)
	if err != nil {
		return nil // an invalid name was never made
	}
	return w.pg.session(ctx, d.Key, func(conn *pgx.Conn) error {
		cur, err := readRole(ctx, conn, name)
		if err != nil || !cur.exists {
			return err
		}
		if ours, err := w.ours(ctx, cur.comment); err != nil || !ours {
			return err
		}
		return dropRole(ctx, conn, name)
	})
}

// ours reports whether comment is the mark of the operator's roles from
// this store.
func (w *roleWorld) ours(ctx context.Context, comment string) (bool, error) {
	m, ok := external.ParseMark(comment)
	if !ok {
		return false, nil
	}
	mine, err := w.marks.mark(ctx, RoleOwner)
	return m.Mark == mine, err
}

// rolesQuery lists every role but the system's with its comment (the
// mark) and the text of its fingerprint (roleFingerprintSQL).
const rolesQuery = `SELECT r.rolname::text, COALESCE(shobj_description(r.oid, 'pg_authid'), ''), ` + roleFingerprintSQL + `
	FROM pg_roles r WHERE r.rolname !~ '^pg_'`

// list lists the roles with their marks and fingerprints.
func (w *roleWorld) list(ctx context.Context) ([]external.Listed, error) {
	rows, err := w.pg.pool.Query(ctx, rolesQuery)
	if err != nil {
		return nil, blame(err)
	}
	listed, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (external.Listed, error) {
		var name, comment, fingerprint string
		err := row.Scan(&name, &comment, &fingerprint)
		mark, _ := external.ParseMark(comment) // an unreadable mark is no mark
		return external.Listed{Name: name, Mark: mark, Fingerprint: drift.Fingerprint(fingerprint)}, err
	})
	return listed, blame(err)
}
