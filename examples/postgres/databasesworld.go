package main

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/converge-go/converge/reconcile/kit/drift"
	"github.com/converge-go/converge/reconcile/kit/external"
)

// This file holds the Database kind's domain as reconcile/kit/external
// takes it: how to observe, create, alter, drop and release a database,
// and list the databases with their marks. CREATE DATABASE cannot share a
// transaction with its mark (COMMENT ON DATABASE): the kit records each
// create in the operator's own directory (external.CreatesDir) before it,
// and adopts a database a crash left unmarked only by that record, never
// by what a status says. Every name is the key's (nameOf: never a name
// recorded in status), checked and quoted before it becomes SQL.

// dbWorld is the Database kind's external.World over PostgreSQL.
type dbWorld struct {
	pg    *pg
	marks *marks
	// step, if set, runs the mark of a new database as a step of its own
	// (a crash test's); nil runs it.
	step func(op string, call func() error) error
}

func (w *dbWorld) world() external.World[DatabaseSpec, DatabaseStatus] {
	return external.World[DatabaseSpec, DatabaseStatus]{Observe: w.observe, Create: w.create, Update: w.update,
		Delete: w.delete, List: w.list, Unmark: w.unmark}
}

// databaseOptions are the Database kind's options of reconcile/kit/external,
// but for the process's: its dependency, intervals and logger. dir is
// the operator's own record of its CREATE DATABASEs.
func databaseOptions(dir string) external.Options[DatabaseSpec, DatabaseStatus] {
	return external.Options[DatabaseSpec, DatabaseStatus]{Name: DatabaseOwner, Prefix: DatabasePrefix, Finalizer: DatabaseFinalizer,
		Record:       func(st *DatabaseStatus) *external.Record { return &st.External },
		ExternalName: func(key string, _ DatabaseSpec) string { return key[len(DatabasePrefix):] },
		Reclaim: func(s DatabaseSpec) external.Reclaim {
			if s.reclaim() == Delete {
				return external.Delete
			}
			return external.Retain
		},
		Classify: specClass, Creates: external.CreatesDir(dir)}
}

// specClass sorts the World's errors: an invalid spec is the object's
// fault (terminal until it changes); a server down is marked by blame.
func specClass(err error) external.Class {
	if errors.Is(err, ErrInvalidSpec) {
		return external.Rejected
	}
	return external.Transient
}

// check returns the database of d's key and its owner, or an error
// matching ErrInvalidSpec if the key or spec is one the operator refuses.
func (w *dbWorld) check(d external.Desired[DatabaseSpec]) (name, owner string, err error) {
	name, err = nameOf(DatabasePrefix, d.Key)
	if err == nil {
		err = d.Spec.validate()
	}
	return name, cmp.Or(d.Spec.Owner, w.pg.user), err
}

// validate is the kit's Options.Validate: the key and spec as check
// refuses them, before a reconcile asks PostgreSQL anything.
func (w *dbWorld) validate(_ context.Context, key string, spec DatabaseSpec) error {
	_, _, err := w.check(external.Desired[DatabaseSpec]{Key: key, Spec: spec})
	return err
}

// observe reads the database of d's key, its mark and its extensions:
// Absent, UpToDate, or Differs when its owner or extensions differ from
// the spec's. The spec becomes SQL only in Create and Update, which check
// it; Observe runs when a Database is deleted too, whatever its spec.
func (w *dbWorld) observe(ctx context.Context, d external.Desired[DatabaseSpec]) (external.Observation[DatabaseStatus], error) {
	var obs external.Observation[DatabaseStatus]
	name, err := nameOf(DatabasePrefix, d.Key)
	if err != nil {
		return obs, nil // an invalid name was never made: Create refuses it
	}
	owner := cmp.Or(d.Spec.Owner, w.pg.user) // compared only: Update checks it
	var cur dbState
	if err = w.pg.session(ctx, d.Key, func(conn *pgx.Conn) (err error) {
		cur, err = readDatabase(ctx, conn, name)
		return err
	}); err != nil || !cur.exists {
		return obs, err
	}
	extMark, err := w.marks.mark(ctx, DatabaseOwner)
	if err != nil {
		return obs, err
	}
	have, err := w.pg.extensions(ctx, name)
	if err != nil {
		return obs, err
	}
	obs.Mark, _ = external.ParseMark(cur.comment) // an unreadable mark is no mark
	created, err := w.ours(ctx, d.Key, obs.Mark)
	obs.State, obs.Fingerprint = external.UpToDate, databaseFingerprint(cur.owner)
	obs.Status = DatabaseStatus{Exists: true, Owner: cur.owner, Created: created}
	for _, e := range sortedSet(d.Spec.Extensions) {
		if _, ok := have[e]; ok {
			obs.Status.Extensions = append(obs.Status.Extensions, e)
		}
	}
	stale := slices.ContainsFunc(slices.Collect(maps.Keys(have)), func(e string) bool {
		return have[e] == extMark.String() && !slices.Contains(d.Spec.Extensions, e)
	})
	if cur.owner != owner || len(obs.Status.Extensions) != len(sortedSet(d.Spec.Extensions)) || stale {
		obs.State = external.Differs
	}
	return obs, err
}

// create runs CREATE DATABASE, marks the database with d's mark, and
// makes its extensions. The first two are two statements, as CREATE
// DATABASE cannot run in a transaction: a crash between them leaves the
// database unmarked, and the kit's record of the create
// (external.CreatesDir) adopts it. A CREATE PostgreSQL refused
// made nothing (NothingMade): the kit forgets it, so that a database of
// that name someone else makes meanwhile is never adopted.
func (w *dbWorld) create(ctx context.Context, d external.Desired[DatabaseSpec]) (string, error) {
	name, owner, err := w.check(d)
	if err != nil {
		return "", err
	}
	extMark, err := w.marks.mark(ctx, DatabaseOwner)
	if err != nil {
		return "", err
	}
	err = w.pg.session(ctx, d.Key, func(conn *pgx.Conn) error {
		err := createDatabase(ctx, conn, name, owner)
		if _, refused := errors.AsType[*pgconn.PgError](err); refused {
			return external.NothingMade(err)
		} else if err != nil {
			return err
		}
		mark := func() error { return setComment(ctx, conn, name, d.Mark.String()) }
		if w.step != nil {
			return w.step("comment on database", mark)
		}
		return mark()
	})
	if err != nil {
		return "", err
	}
	_, err = w.pg.ensureExtensions(ctx, name, d.Spec.Extensions, extMark.String())
	return "", err
}

// update makes the database's owner and extensions as d's spec says, and
// marks it if the kit adopted it (d.Mark).
func (w *dbWorld) update(ctx context.Context, d external.Desired[DatabaseSpec], obs external.Observation[DatabaseStatus]) error {
	name, owner, err := w.check(d)
	if err != nil {
		return err
	}
	extMark, err := w.marks.mark(ctx, DatabaseOwner)
	if err != nil {
		return err
	}
	err = w.pg.session(ctx, d.Key, func(conn *pgx.Conn) error {
		if !d.Mark.IsZero() {
			if err := setComment(ctx, conn, name, d.Mark.String()); err != nil {
				return err
			}
		}
		if obs.Status.Owner == owner {
			return nil
		}
		return setOwner(ctx, conn, name, owner)
	})
	if err != nil {
		return err
	}
	_, err = w.pg.ensureExtensions(ctx, name, d.Spec.Extensions, extMark.String())
	return err
}

// delete drops the database of d's key if the operator made it from this
// store for that key (its mark, or the kit's word that it adopted it
// unmarked: d.Mark); any other database is left as it is. The database
// is the key's, never d.Name.
func (w *dbWorld) delete(ctx context.Context, d external.Desired[DatabaseSpec]) error {
	return w.ifOurs(ctx, d, dropDatabase)
}

// unmark removes the mark of the database of d's key, if it is the
// operator's (reclaim retain: no operator drops it later).
func (w *dbWorld) unmark(ctx context.Context, d external.Desired[DatabaseSpec]) error {
	return w.ifOurs(ctx, d, func(ctx context.Context, conn *pgx.Conn, name string) error {
		return setComment(ctx, conn, name, "")
	})
}

func (w *dbWorld) ifOurs(ctx context.Context, d external.Desired[DatabaseSpec], do func(context.Context, *pgx.Conn, string) error) error {
	name, err := nameOf(DatabasePrefix, d.Key)
	if err != nil {
		return nil // an invalid name was never made
	}
	return w.pg.session(ctx, d.Key, func(conn *pgx.Conn) error {
		cur, err := readDatabase(ctx, conn, name)
		if err != nil || !cur.exists {
			return err
		}
		mark, _ := external.ParseMark(cur.comment)
		ours, err := w.ours(ctx, d.Key, mark)
		if err != nil || !(ours || mark.IsZero() && !d.Mark.IsZero()) {
			return err
		}
		return do(ctx, conn, name)
	})
}

// ours reports whether m is the operator's mark, from this store, for key.
func (w *dbWorld) ours(ctx context.Context, key string, m external.Mark) (bool, error) {
	mine, err := w.marks.mark(ctx, DatabaseOwner)
	return m.Mark == mine && m.Key == key, err
}

// databasesQuery lists every database but the templates with its comment
// and its owner.
const databasesQuery = `SELECT datname::text, COALESCE(shobj_description(oid, 'pg_database'), ''), pg_get_userbyid(datdba)::text
	FROM pg_database WHERE NOT datistemplate`

// list lists the databases with their marks and fingerprints.
func (w *dbWorld) list(ctx context.Context) ([]external.Listed, error) {
	rows, err := w.pg.pool.Query(ctx, databasesQuery)
	if err != nil {
		return nil, blame(err)
	}
	listed, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (external.Listed, error) {
		var name, comment, owner string
		err := row.Scan(&name, &comment, &owner)
		mark, _ := external.ParseMark(comment) // an unreadable mark is no mark
		return external.Listed{Name: name, Mark: mark, Fingerprint: databaseFingerprint(owner)}, err
	})
	return listed, blame(err)
}

// databaseFingerprint is what drift compares of a database: that it
// exists, and its owner, listed by List and observed by Observe alike.
func databaseFingerprint(owner string) string { return drift.Fingerprint(owner) }
