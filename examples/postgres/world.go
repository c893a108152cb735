package main

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/converge-go/converge/reconcile/kit/drift"
	"github.com/converge-go/converge/reconcile/kit/prune"
)

// This file holds how the operator looks at the databases beside its
// reconciles: the drift source's listing (a database dropped by hand
// makes no store event: a poll of the catalog finds it and wakes its key;
// the reconciler tells the source what it made, so that what it made and
// someone undid before the next poll is found too) and the pruner's world
// (every database with the mark in its comment). Roles have theirs from
// reconcile/kit/external (rolesworld.go).

// databaseFingerprints lists the databases with their owners.
func (p *pg) databaseFingerprints() drift.ListFunc {
	return func(ctx context.Context) ([]drift.Observed, error) {
		rows, err := p.pool.Query(ctx, databasesFingerprintQuery)
		if err != nil {
			return nil, blame(err)
		}
		return pgx.CollectRows(rows, func(row pgx.CollectableRow) (drift.Observed, error) {
			var name, owner string
			err := row.Scan(&name, &owner)
			return drift.Observed{Key: DatabasePrefix + name, Fingerprint: databaseFingerprint(owner)}, err
		})
	}
}

// databaseFingerprint is what the database drift source compares: that
// the database exists, and its owner.
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

// pruneDatabase drops a database the database pruner chose: marked by the
// operator from this store for reclaim delete, and named by no Database.
func (p *pg) pruneDatabase(ctx context.Context, obj prune.WorldObject) error {
	return p.session(ctx, obj.Key, func(conn *pgx.Conn) error { return dropDatabase(ctx, conn, obj.Name) })
}
