package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/store"
)

// PostgreSQL is blamed (dependency.Down, which opens the controllers'
// circuit) for what says the server cannot serve, and only for that: an
// object's own SQL error, a store error and a cancelled reconcile are not
// the server's.
func TestOnlyAServerThatCannotServeIsBlamed(t *testing.T) {
	down := []error{
		&net.OpError{Op: "dial", Err: errors.New("connection refused")},
		fmt.Errorf("acquire: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}),
		&pgconn.PgError{Code: "08006"},
		&pgconn.PgError{Code: "57P03", Message: "the database system is starting up"},
		context.DeadlineExceeded,
	}
	for _, err := range down {
		require.ErrorIs(t, blame(err), dependency.ErrDown, "%v", err)
	}
	notDown := []error{
		nil,
		&pgconn.PgError{Code: "42704", Message: `role "nobody" does not exist`},
		&pgconn.PgError{Code: "2BP01", Message: "role cannot be dropped because some objects depend on it"},
		fmt.Errorf("status: %w", store.ErrUnavailable),
		fmt.Errorf("status: %w", store.ErrConflict),
		context.Canceled,
	}
	for _, err := range notDown {
		require.NotErrorIs(t, blame(err), dependency.ErrDown, "%v", err)
	}
}

// Every advisory lock of an object is its own, and the same in every
// process.
func TestAdvisoryLocksAreOnePerObjectAndStable(t *testing.T) {
	require.Equal(t, lockID("roles/app"), lockID("roles/app"))
	require.NotEqual(t, lockID("roles/app"), lockID("databases/app"))
	require.NotEqual(t, lockID(dumpLock), lockID("roles/app"))
}
