package main

import (
	"context"
	"errors"
	"hash/fnv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/store"
)

// This file holds the operator's way to its PostgreSQL server: a pool of
// connections, the session that acts on one object, the quoting of names
// and text in DDL, and the rule that tells a server down from an error of
// one object.

// DependencyName names PostgreSQL in the operator's health, /readyz and
// the debug page.
const DependencyName = "postgres"

// appName is the application_name of the operator's sessions.
const appName = "converge-postgres-operator"

// pg is the PostgreSQL server the operator acts on.
type pg struct {
	pool *pgxpool.Pool
	// user is the role the operator connects as, the default owner of
	// its databases.
	user string
}

// newPG returns a pool of connections of cfg; it connects lazily, so
// that an operator starts while its server is down.
func newPG(cfg *pgxpool.Config) (*pg, error) {
	cfg.ConnConfig.RuntimeParams["application_name"] = appName
	cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	cfg.MaxConns = 16
	cfg.HealthCheckPeriod = 5 * time.Second
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	return &pg{pool: pool, user: cfg.ConnConfig.User}, nil
}

// Close closes the pool.
func (p *pg) Close() { p.pool.Close() }

// ping is PostgreSQL's dependency check: a round trip on a pooled
// connection.
func (p *pg) ping(ctx context.Context) error {
	c, err := p.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	_, err = c.Exec(ctx, ";")
	if err != nil {
		c.Conn().Close(context.Background()) // a broken connection is not pooled again
	}
	return err
}

// session runs fn on one connection holding the advisory lock of key, so
// that no two sessions act on one object at once, across restarts of the
// operator: the session of an operator killed mid-statement ends, and lets
// the lock go, only once its statement has ended, so that the next
// operator's reads see what it did before it acts again. Errors of the
// server being down are marked with dependency.Down.
func (p *pg) session(ctx context.Context, key string, fn func(conn *pgx.Conn) error) error {
	c, err := p.pool.Acquire(ctx)
	if err != nil {
		return blame(err)
	}
	id := lockID(key)
	if _, err := c.Exec(ctx, "SELECT pg_advisory_lock($1)", id); err != nil {
		c.Conn().Close(context.Background())
		c.Release()
		return blame(err)
	}
	err = fn(c.Conn())
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, uerr := c.Exec(uctx, "SELECT pg_advisory_unlock($1)", id); uerr != nil {
		c.Conn().Close(uctx) // closing the session lets the lock go
	}
	c.Release()
	return blame(err)
}

// lockID is the advisory lock of name, shared by every operator process.
func lockID(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("converge-postgres:" + name))
	return int64(h.Sum64())
}

// inTx runs fn in a transaction on conn: DDL on roles is transactional, so
// a role is created with its mark and memberships, or not at all.
func inTx(ctx context.Context, conn *pgx.Conn, fn func(tx pgx.Tx) error) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	return tx.Commit(ctx)
}

// execer is a connection or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ident quotes a name for DDL.
func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

// literal quotes text for DDL (standard_conforming_strings is on by
// default since PostgreSQL 9.1: a backslash is itself).
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// blame marks err with dependency.Down when it says the server is down or
// unreachable, rather than that one object's statement failed: a refused
// or broken connection, a timeout, a server shutting down or starting up.
// A statement's own error (a role that does not exist, a name taken) is
// returned as it is: the object's error, not the server's.
func blame(err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && !serverDown(pgErr.Code) {
		return err
	}
	if errors.Is(err, dependency.ErrDown) || storeError(err) {
		return err
	}
	return dependency.Down(DependencyName, err)
}

// storeError reports whether err came from the store (a status write
// made while acting): never PostgreSQL's fault.
func storeError(err error) bool {
	for _, target := range []error{store.ErrNotFound, store.ErrExists, store.ErrConflict, store.ErrGuardFailed,
		store.ErrUnavailable, store.ErrInvalid, store.ErrCompacted, store.ErrLagging} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// serverDown reports whether SQLSTATE code says the server cannot serve:
// connection exceptions (08), operator intervention (57P: shutdown,
// cannot connect now), too many connections.
func serverDown(code string) bool {
	return strings.HasPrefix(code, "08") || strings.HasPrefix(code, "57P") || code == "53300"
}
