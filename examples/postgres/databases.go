package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/converge-go/converge/internal/atomicfile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// This file holds what the Database reconciler does in PostgreSQL: read a
// database from pg_database, create it, set its owner and its mark, make
// its extensions, and drop or release it; and the intents of CREATE
// DATABASE it keeps in its own directory.

// dbState is a database as pg_database shows it.
type dbState struct {
	exists  bool
	owner   string
	comment string
}

const databaseQuery = `SELECT pg_get_userbyid(datdba)::text, COALESCE(shobj_description(oid, 'pg_database'), '')
	FROM pg_database WHERE datname = $1`

// readDatabase returns the database name as pg_database has it.
func readDatabase(ctx context.Context, q execer, name string) (dbState, error) {
	st := dbState{exists: true}
	err := q.QueryRow(ctx, databaseQuery, name).Scan(&st.owner, &st.comment)
	if errors.Is(err, pgx.ErrNoRows) {
		return dbState{}, nil
	}
	return st, err
}

// ensure makes database name exist, owned by owner, marked as the
// operator's when it made it, with the spec's extensions. CREATE DATABASE
// cannot share a transaction with its mark: before it, ensure records the
// intent in the operator's own directory (createIntents), and a database
// found unmarked is adopted as the one this object was creating when the
// operator stopped only if that intent is there. It also shows the CREATE
// in obj's status (Creating), through s, for whoever watches; the status
// is never trusted. It returns the object as last written and the status
// it observed.
func (r *databaseReconciler) ensure(ctx context.Context, conn *pgx.Conn, s store.Store[*Database], obj store.Object[*Database],
	name, owner string,
) (store.Object[*Database], DatabaseStatus, error) {
	spec, prev := obj.Value.Spec, obj.Value.Status
	cur, err := readDatabase(ctx, conn, name)
	if err != nil {
		return obj, prev, err
	}
	if !cur.exists {
		if obj, err = r.create(ctx, conn, s, obj, name, owner); err != nil {
			return obj, obj.Value.Status, err
		}
		cur = dbState{exists: true, owner: owner}
	}
	intended, err := r.intents.holds(obj, name)
	if err != nil {
		return obj, obj.Value.Status, err
	}
	created, err := r.markCreated(ctx, conn, name, spec.reclaim(), cur.comment, intended)
	if err == nil {
		err = r.intents.clear(name) // judged: marked, or another's
	}
	if err != nil {
		return obj, obj.Value.Status, err
	}
	if cur.owner != owner {
		if err := setOwner(ctx, conn, name, owner); err != nil {
			return obj, obj.Value.Status, err
		}
	}
	mark, err := r.marks.mark(ctx, DatabaseOwner)
	if err != nil {
		return obj, obj.Value.Status, err
	}
	present, err := r.pg.ensureExtensions(ctx, name, spec.Extensions, mark.String())
	st := DatabaseStatus{Exists: true, Owner: owner, Extensions: present, Created: created}
	return obj, st, err
}

// create runs CREATE DATABASE name for obj, its intent recorded first.
// A CREATE that PostgreSQL refused made nothing: its intent is removed, so
// that a database of that name someone else makes is never adopted. That
// includes "already exists": a database made since readDatabase cannot
// be told from another's (even one a killed operator's session was still
// creating), and is kept, unadopted, never dropped.
func (r *databaseReconciler) create(ctx context.Context, conn *pgx.Conn, s store.Store[*Database], obj store.Object[*Database],
	name, owner string,
) (store.Object[*Database], error) {
	if prev := obj.Value.Status; !prev.Creating {
		st := DatabaseStatus{Creating: true, Extensions: prev.Extensions}
		var err error
		if obj, err = resource.WriteStatus(ctx, s, obj, st, notReady("Creating", "CREATE DATABASE "+name)); err != nil {
			return obj, err
		}
	}
	if err := r.intents.record(obj, name); err != nil {
		return obj, err
	}
	err := createDatabase(ctx, conn, name, owner)
	if _, refused := errors.AsType[*pgconn.PgError](err); refused {
		return obj, errors.Join(err, r.intents.clear(name))
	}
	return obj, err
}

// markCreated reports whether the operator made database name from this
// store (its comment is one of the operator's marks, or is empty while
// the operator's own intent to create it is recorded: intended), and then
// makes its comment the mark of policy.
func (r *databaseReconciler) markCreated(ctx context.Context, conn *pgx.Conn, name string, policy Reclaim, comment string, intended bool) (bool, error) {
	ours, err := r.marks.ours(ctx, comment, DatabaseOwner, RetainedOwner)
	if err != nil || !(ours || comment == "" && intended) {
		return false, err
	}
	owner := RetainedOwner
	if policy == Delete {
		owner = DatabaseOwner
	}
	want, err := r.marks.mark(ctx, owner)
	if err != nil || comment == want.String() {
		return true, err
	}
	return true, setComment(ctx, conn, name, want.String())
}

// reclaim is a Database's cleanup. A database the operator made from this
// store (its mark, or, unmarked, the operator's own intent to create it
// for obj) is dropped with reclaim delete, and released with retain: its
// mark is removed, so that no operator drops it later. Any other database
// is left as it is, whatever obj's status says. The intent goes last.
func (r *databaseReconciler) reclaim(ctx context.Context, obj store.Object[*Database]) error {
	name, err := nameOf(DatabasePrefix, obj.Key)
	if err != nil {
		return nil // an invalid name was never made
	}
	err = r.pg.session(ctx, obj.Key, func(conn *pgx.Conn) error {
		cur, err := readDatabase(ctx, conn, name)
		if err != nil || !cur.exists {
			return err
		}
		intended, err := r.intents.holds(obj, name)
		if err != nil {
			return err
		}
		ours, err := r.marks.ours(ctx, cur.comment, DatabaseOwner, RetainedOwner)
		if err != nil || !(ours || cur.comment == "" && intended) {
			return err
		}
		if obj.Value.Spec.reclaim() == Delete {
			return dropDatabase(ctx, conn, name)
		}
		return setComment(ctx, conn, name, "")
	})
	if err != nil {
		return err
	}
	return r.intents.clear(name)
}

// createDatabase creates the database name owned by owner. CREATE
// DATABASE cannot run in a transaction: its mark is written apart, after
// it (setComment), and createIntents records the intent before it.
func createDatabase(ctx context.Context, conn *pgx.Conn, name, owner string) error {
	_, err := conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s OWNER %s", ident(name), ident(owner)))
	return err
}

// setComment sets the comment of database name; "" removes it.
func setComment(ctx context.Context, conn *pgx.Conn, name, comment string) error {
	text := "NULL"
	if comment != "" {
		text = literal(comment)
	}
	_, err := conn.Exec(ctx, fmt.Sprintf("COMMENT ON DATABASE %s IS %s", ident(name), text))
	return err
}

// setOwner makes owner the owner of database name.
func setOwner(ctx context.Context, conn *pgx.Conn, name, owner string) error {
	_, err := conn.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s OWNER TO %s", ident(name), ident(owner)))
	return err
}

// dropDatabase drops database name, ending the sessions connected to it.
func dropDatabase(ctx context.Context, conn *pgx.Conn, name string) error {
	_, err := conn.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", ident(name)))
	return err
}

// ensureExtensions makes database name hold the extensions of want, each
// it creates marked with mark (COMMENT ON EXTENSION), and drops those
// that carry mark and that want no longer lists, on a connection of its
// own to that database. What it drops is what the catalog says it made,
// never what a status lists: an extension it did not make is never
// dropped. It returns the extensions of want present.
func (p *pg) ensureExtensions(ctx context.Context, name string, want []string, mark string) ([]string, error) {
	cfg := p.pool.Config().ConnConfig.Copy()
	cfg.Database = name
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	have, err := readExtensions(ctx, conn) // name → comment
	if err != nil {
		return nil, err
	}
	var present []string
	for _, e := range sortedSet(want) {
		if _, ok := have[e]; !ok {
			if err := createExtension(ctx, conn, e, mark); err != nil {
				return present, err
			}
		}
		present = append(present, e)
	}
	for _, e := range slices.Sorted(maps.Keys(have)) {
		if have[e] == mark && !slices.Contains(want, e) {
			if _, err := conn.Exec(ctx, "DROP EXTENSION IF EXISTS "+ident(e)); err != nil {
				return present, err
			}
		}
	}
	return present, nil
}

// extensionsQuery lists a database's extensions with their comments.
const extensionsQuery = `SELECT extname::text, COALESCE(obj_description(oid, 'pg_extension'), '') FROM pg_extension`

// readExtensions returns the extensions of conn's database with their
// comments.
func readExtensions(ctx context.Context, conn *pgx.Conn) (map[string]string, error) {
	rows, err := conn.Query(ctx, extensionsQuery)
	if err != nil {
		return nil, err
	}
	have := map[string]string{}
	var name, comment string
	_, err = pgx.ForEachRow(rows, []any{&name, &comment}, func() error {
		have[name] = comment
		return nil
	})
	return have, err
}

// createExtension creates extension e, then gives it mark as its comment.
// They are two statements, not one transaction, so that a CREATE that ran
// is never run again: an operator stopped between them leaves the
// extension unmarked, and so never drops it, as it never drops one it did
// not make.
func createExtension(ctx context.Context, conn *pgx.Conn, e, mark string) error {
	if _, err := conn.Exec(ctx, "CREATE EXTENSION "+ident(e)); err != nil {
		return err
	}
	_, err := conn.Exec(ctx, fmt.Sprintf("COMMENT ON EXTENSION %s IS %s", ident(e), literal(mark)))
	return err
}

// databasesFingerprintQuery lists every database but the templates with
// what the drift source compares: that it exists, and its owner.
const databasesFingerprintQuery = `SELECT datname::text, pg_get_userbyid(datdba)::text FROM pg_database WHERE NOT datistemplate`

// databaseComments lists every database but the templates with its
// comment.
const databaseComments = `SELECT datname::text, COALESCE(shobj_description(oid, 'pg_database'), '') FROM pg_database WHERE NOT datistemplate`

// createIntents are the intents of CREATE DATABASE, kept where no holder
// of a store token can write: the operator's own directory (-dir, private
// to its user), one file per database being created (dir/NAME), holding
// the key and create revision of the Database creating it. The intent is
// written durably before CREATE DATABASE and removed once the database is
// judged (marked, or found to be another's), or its Database reclaimed. A
// database found without a comment is the operator's only while the
// intent of the very object that finds it is there: an intent left by an
// earlier object of the same key (another create revision) adopts
// nothing, and neither does anything a status says. An operator started
// with another directory adopts nothing such a crash left: it leaves the
// database as one it did not make, never dropped.
type createIntents struct{ dir string }

// intentOf is what the intent of obj holds.
func intentOf(obj store.Object[*Database]) []byte {
	return fmt.Appendf(nil, "%s %d\n", obj.Key, obj.CreateRevision)
}

// path is the file of the intent to create database name, which must be
// an identifier the operator accepts (a file name then).
func (c createIntents) path(name string) (string, error) {
	if err := checkNames("database", name); err != nil {
		return "", err
	}
	return filepath.Join(c.dir, name), nil
}

// record records, durably, that obj is about to create database name.
func (c createIntents) record(obj store.Object[*Database], name string) error {
	p, err := c.path(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(p, intentOf(obj), 0o600)
}

// holds reports whether obj's intent to create database name is recorded.
func (c createIntents) holds(obj store.Object[*Database], name string) (bool, error) {
	p, err := c.path(name)
	if err != nil {
		return false, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil && bytes.Equal(b, intentOf(obj)), err
}

// clear removes the intent to create database name, if any.
func (c createIntents) clear(name string) error {
	p, err := c.path(name)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
