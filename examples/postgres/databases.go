package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"
)

// This file holds the statements of the Database kind (databasesworld.go):
// read a database from pg_database, create it, set its owner and its
// comment, drop it, and make its extensions.

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

// createDatabase creates the database name owned by owner. CREATE
// DATABASE cannot run in a transaction: its mark is written apart, after
// it (setComment).
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
	conn, err := p.connect(ctx, name)
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

// connect opens a connection of its own to database name.
func (p *pg) connect(ctx context.Context, name string) (*pgx.Conn, error) {
	cfg := p.pool.Config().ConnConfig.Copy()
	cfg.Database = name
	conn, err := pgx.ConnectConfig(ctx, cfg)
	return conn, blame(err)
}

// extensions returns the extensions of database name with their comments.
func (p *pg) extensions(ctx context.Context, name string) (map[string]string, error) {
	conn, err := p.connect(ctx, name)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return readExtensions(ctx, conn)
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
