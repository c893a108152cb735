package main

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
)

// serveKinds serves a memory store that declares kinds.
func serveKinds(t *testing.T, kinds string) (*store.Memory[value], string) {
	t.Helper()
	m := store.NewMemory[value]()
	t.Cleanup(func() { _ = m.Close() })
	h, err := httpstore.NewHandler[value](m, httpstore.WithReadWriteToken(adminToken), httpstore.WithKinds([]byte(kinds)))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return m, srv.URL
}

const vmKinds = `{"kinds":[{"prefix":"vms/","columns":[
 {"name":"READY","path":".conditions[Ready].status"},
 {"name":"REASON","path":".conditions[Ready].reason"},
 {"name":"SIZE","path":".status.size"},
 {"name":"AGE","path":".conditions[Ready].lastTransitionTime","type":"age"}]}]}`

// TestGetAndListPrintThePrinterColumnsAKindDeclares: -o table prints the
// key and the columns the server declares for the object's kind, as
// kubectl get does: ready, reason, a status field and an age; a missing
// value is <none>, and objects of a kind without columns show their
// revision in a table of their own.
func TestGetAndListPrintThePrinterColumnsAKindDeclares(t *testing.T) {
	m, url := serveKinds(t, vmKinds)
	since := time.Now().Add(-3 * time.Hour).UTC().Format(time.RFC3339)
	for key, v := range map[string]string{
		"vms/a": `{"spec":{"size":2},"status":{"size":2},"conditions":[{"type":"Ready","status":"True","reason":"Available","lastTransitionTime":"` + since + `"}]}`,
		"vms/b": `{"spec":{"size":1}}`,
		"zz/c":  `{"spec":1}`,
	} {
		_, err := m.Create(t.Context(), key, value(v))
		require.NoError(t, err)
	}
	r := runAs(t, url, "", "get", "-o", "table", "vms/a")
	require.Equal(t, exitOK, r.code, r.stderr)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	require.Len(t, lines, 2, r.stdout)
	require.Equal(t, []string{"KEY", "READY", "REASON", "SIZE", "AGE"}, strings.Fields(lines[0]))
	require.Equal(t, []string{"vms/a", "True", "Available", "2", "3h"}, strings.Fields(lines[1]))

	r = runAs(t, url, "", "list", "-o", "table")
	require.Equal(t, exitOK, r.code, r.stderr)
	lines = strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	require.Len(t, lines, 6, r.stdout)
	require.Equal(t, []string{"vms/b", "<none>", "<none>", "<none>", "<none>"}, strings.Fields(lines[2]))
	require.Empty(t, lines[3])
	require.Equal(t, []string{"KEY", "REVISION"}, strings.Fields(lines[4]))
	require.Equal(t, "zz/c", strings.Fields(lines[5])[0])
}

// TestATableFromAServerWithoutKindsShowsKeysAndRevisions: a server that
// declares no kinds still prints a table: keys and revisions.
func TestATableFromAServerWithoutKindsShowsKeysAndRevisions(t *testing.T) {
	m, url := serve(t)
	_, err := m.Create(t.Context(), "a", value(`1`))
	require.NoError(t, err)
	r := runAs(t, url, "", "list", "-o", "table")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, []string{"KEY", "REVISION", "a", "1"}, strings.Fields(r.stdout))
	r = runAs(t, url, "", "list", "-o", "yaml")
	require.Equal(t, exitUsage, r.code)
}
