package cluster

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The server's log lines give their time, process, transaction,
// application name and message, and a logged statement its SQL, simple or extended protocol.
func TestLogLinesGiveTheirSessionAndStatement(t *testing.T) {
	l, ok := parseLogLine(`2026-12-02 01:09:26.699 UTC [1296] 0 psql LOG:  statement: CREATE ROLE "app" LOGIN`)
	require.True(t, ok)
	require.Equal(t, 1296, l.PID)
	require.Zero(t, l.XID)
	require.Equal(t, "psql", l.App)
	sql, ok := l.Statement()
	require.True(t, ok)
	require.Equal(t, `CREATE ROLE "app" LOGIN`, sql)

	l, ok = parseLogLine(`2026-12-02 01:09:26.700 UTC [1297] 745  LOG:  execute <unnamed>: CREATE DATABASE "app" OWNER "app"`)
	require.True(t, ok)
	require.Empty(t, l.App)
	require.Equal(t, uint64(745), l.XID)
	sql, ok = l.Statement()
	require.True(t, ok)
	require.Equal(t, `CREATE DATABASE "app" OWNER "app"`, sql)

	l, ok = parseLogLine(`2026-12-02 01:09:27.000 UTC [1298] 0 backups_2fapp.c5.g1.a1 LOG:  disconnection: session time: 0:00:00.500 user=converge database=app host=127.0.0.1 port=1`)
	require.True(t, ok)
	require.Equal(t, "backups_2fapp.c5.g1.a1", l.App)
	_, ok = l.Statement()
	require.False(t, ok)

	_, ok = parseLogLine("\tcontinuation of a statement")
	require.False(t, ok)
}
