package main

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/converge-go/converge/reconcile/kit/drift"
	"github.com/converge-go/converge/reconcile/kit/prune"
)

// This file holds how the operator looks at the whole server beside its
// reconciles: the drift sources' listings (a role altered or dropped with
// psql, a database dropped by hand, make no store event: a poll of the
// catalog finds them and wakes their keys; the reconcilers tell the
// sources what they made, so that what they made and someone undid
// before the next poll is found too) and the pruners' worlds (every role
// and database with the mark in its comment).

// roleFingerprints lists the roles, each with a fingerprint of what the
// Role reconciler compares.
func (p *pg) roleFingerprints() drift.ListFunc {
	return func(ctx context.Context) ([]drift.Observed, error) {
		rows, err := p.pool.Query(ctx, rolesFingerprintQuery)
		if err != nil {
			return nil, blame(err)
		}
		return pgx.CollectRows(rows, func(row pgx.CollectableRow) (drift.Observed, error) {
			var name, members string
			var login bool
			var limit int
			err := row.Scan(&name, &login, &limit, &members)
			var inRoles []string
			if members != "" {
				inRoles = strings.Split(members, ",")
			}
			return drift.Observed{Key: RolePrefix + name, Fingerprint: roleFingerprint(login, limit, inRoles)}, err
		})
	}
}

// roleFingerprint is what the role drift source compares, listed by it
// and told it by the Role reconciler (drift.Source.Reconciled) alike.
func roleFingerprint(login bool, limit int, inRoles []string) string {
	return drift.Fingerprint(strconv.FormatBool(login), strconv.Itoa(limit), strings.Join(sortedSet(inRoles), ","))
}

// databaseFingerprint is what the database drift source compares: that
// the database exists, and its owner, listed by the Database World's
// List and observed by its Observe alike.
func databaseFingerprint(owner string) string { return drift.Fingerprint(owner) }

// filterDesired keeps the observations of desired keys: the roles and
// databases no object names are not the operator's to wake.
func filterDesired(list drift.ListFunc, desired func(key string) bool) drift.ListFunc {
	return func(ctx context.Context) ([]drift.Observed, error) {
		all, err := list(ctx)
		var out []drift.Observed
		for _, o := range all {
			if desired(o.Key) {
				out = append(out, o)
			}
		}
		return out, err
	}
}

// world returns a pruner's world: every row of query (a name and its
// comment), under prefix, with the mark its comment holds.
func (p *pg) world(query, prefix string) func(ctx context.Context) ([]prune.WorldObject, error) {
	return func(ctx context.Context) ([]prune.WorldObject, error) {
		rows, err := p.pool.Query(ctx, query)
		if err != nil {
			return nil, blame(err)
		}
		return pgx.CollectRows(rows, func(row pgx.CollectableRow) (prune.WorldObject, error) {
			var name, comment string
			err := row.Scan(&name, &comment)
			mark, _ := prune.ParseMark(comment) // an unreadable mark is no mark
			return prune.WorldObject{Key: prefix + name, Name: name, Mark: mark}, err
		})
	}
}

// pruneRole drops a role the role pruner chose: marked by the operator
// from this store, and named by no Role.
func (p *pg) pruneRole(ctx context.Context, obj prune.WorldObject) error {
	return p.session(ctx, obj.Key, func(conn *pgx.Conn) error { return dropRole(ctx, conn, obj.Name) })
}
