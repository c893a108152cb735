package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/stretchr/testify/require"
)

// binary is convergectl, built once by TestMain, run by the tests as a
// shell user runs it.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "convergectl")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "convergectl")
	goTool, err := exec.LookPath("go") // go test puts its own go first in PATH
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if out, err := exec.Command(goTool, "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const (
	adminToken  = "admin-secret"
	viewerToken = "viewer-secret"
)

// serve serves a memory store over HTTP with a read-write and a read-only
// token, and returns it and its URL.
func serve(t *testing.T) (*store.Memory[value], string) {
	t.Helper()
	m := store.NewMemory[value]()
	t.Cleanup(func() { _ = m.Close() })
	h, err := httpstore.NewHandler[value](m, httpstore.WithReadWriteToken(adminToken), httpstore.WithReadOnlyToken(viewerToken))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return m, srv.URL
}

// result is what one run of the binary gave.
type result struct {
	code           int
	stdout, stderr string
}

// ctl runs convergectl with args and stdin against url, as the admin
// (through $CONVERGE_SERVER and $CONVERGE_TOKEN unless args override them).
func ctl(t *testing.T, url, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "CONVERGE_SERVER="+url, "CONVERGE_TOKEN="+adminToken)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %v: %v", args, err)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errOut.String()}
}

// runIn runs convergectl in this process, as run is called by main, with
// ctx, args and stdin; the server and the token come from args or from the
// environment the test sets (t.Setenv).
func runIn(t *testing.T, ctx context.Context, stdin io.Reader, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(ctx, args, stdin, &out, &errOut)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// runAs runs convergectl in this process against url as the admin, as
// ctl runs the binary.
func runAs(t *testing.T, url, stdin string, args ...string) result {
	t.Helper()
	t.Setenv("CONVERGE_SERVER", url)
	t.Setenv("CONVERGE_TOKEN", adminToken)
	return runIn(t, t.Context(), strings.NewReader(stdin), args...)
}

func decodeObject(t *testing.T, line string) object {
	t.Helper()
	var o object
	require.NoError(t, json.Unmarshal([]byte(line), &o), line)
	return o
}

// TestShellSessionCreatesReadsListsUpdatesPatchesAndDeletes drives the
// binary through a whole session and checks each answer against the
// server's store.
func TestShellSessionCreatesReadsListsUpdatesPatchesAndDeletes(t *testing.T) {
	m, url := serve(t)
	ctx := t.Context()

	r := ctl(t, url, `{"command":"backup","retries":1}`, "put", "jobs/backup")
	require.Equal(t, 0, r.code, r.stderr)
	created := decodeObject(t, r.stdout)
	got, err := m.Get(ctx, "jobs/backup")
	require.NoError(t, err)
	require.Equal(t, created.Revision, got.Revision)
	require.JSONEq(t, `{"command":"backup","retries":1}`, string(got.Value))

	file := filepath.Join(t.TempDir(), "v.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"command":"report"}`), 0o600))
	r = ctl(t, url, "", "put", "-create", "jobs/report", file)
	require.Equal(t, 0, r.code, r.stderr)

	r = ctl(t, url, "", "get", "jobs/backup")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, created, decodeObject(t, r.stdout))

	// list: the objects under the prefix, and the revision the list reflects.
	r = ctl(t, url, "", "list", "jobs/")
	require.Equal(t, 0, r.code, r.stderr)
	var list struct {
		Revision int64    `json:"revision"`
		Objects  []object `json:"objects"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))
	rev, err := m.Revision(ctx)
	require.NoError(t, err)
	require.Equal(t, rev, list.Revision)
	require.Len(t, list.Objects, 2)
	require.Equal(t, []string{"jobs/backup", "jobs/report"}, []string{list.Objects[0].Key, list.Objects[1].Key})
	r = ctl(t, url, "", "list", "-keys", "jobs/")
	require.Equal(t, fmt.Sprintf("jobs/backup %d\njobs/report %d\n", list.Objects[0].Revision, list.Objects[1].Revision), r.stdout)

	// Compare-and-swap with the revision read, then a merge patch.
	r = ctl(t, url, `{"command":"backup","retries":3}`, "put", "-rev", fmt.Sprint(created.Revision), "jobs/backup")
	require.Equal(t, 0, r.code, r.stderr)
	r = ctl(t, url, `{"retries":null,"timeout":"1m"}`, "apply", "jobs/backup")
	require.Equal(t, 0, r.code, r.stderr)
	got, err = m.Get(ctx, "jobs/backup")
	require.NoError(t, err)
	require.JSONEq(t, `{"command":"backup","timeout":"1m"}`, string(got.Value))

	// Read-modify-write put replaces whatever is there.
	r = ctl(t, url, `[1,2,3]`, "put", "jobs/backup")
	require.Equal(t, 0, r.code, r.stderr)
	got, err = m.Get(ctx, "jobs/backup")
	require.NoError(t, err)
	require.JSONEq(t, `[1,2,3]`, string(got.Value))

	r = ctl(t, url, "", "delete", "-rev", fmt.Sprint(got.Revision), "jobs/backup")
	require.Equal(t, 0, r.code, r.stderr)
	r = ctl(t, url, "", "delete", "jobs/report")
	require.Equal(t, 0, r.code, r.stderr)
	objs, _, err := m.List(ctx, "")
	require.NoError(t, err)
	require.Empty(t, objs)
}

// TestExitCodesTellNotFoundConflictExistsRefusedAndUsageApart checks each
// documented exit code, that the error goes to stderr with nothing on
// stdout, and that no refused write changed the store.
func TestExitCodesTellNotFoundConflictExistsRefusedAndUsageApart(t *testing.T) {
	m, url := serve(t)
	ctx := t.Context()
	obj, err := m.Create(ctx, "k", value(`{"v":1}`))
	require.NoError(t, err)

	cases := []struct {
		name  string
		stdin string
		args  []string
		code  int
		in    string // expected in stderr
	}{
		{"get of a missing key", "", []string{"get", "missing"}, exitNotFound, "not found"},
		{"delete of a missing key", "", []string{"delete", "missing"}, exitNotFound, "not found"},
		{"apply to a missing key", `{}`, []string{"apply", "missing"}, exitNotFound, "not found"},
		{"put at a stale revision", `{"v":2}`, []string{"put", "-rev", fmt.Sprint(obj.Revision + 100), "k"}, exitConflict, "conflict"},
		{"delete at a stale revision", "", []string{"delete", "-rev", fmt.Sprint(obj.Revision + 100), "k"}, exitConflict, "conflict"},
		{"create of an existing key", `{"v":2}`, []string{"put", "-create", "k"}, exitExists, "exists"},
		{"wrong token", `{"v":2}`, []string{"-token", "nope", "put", "k"}, exitRefused, "unauthorized"},
		{"read-only token writing", `{"v":2}`, []string{"-token", viewerToken, "put", "k"}, exitRefused, "forbidden"},
		{"invalid JSON", `{"v":`, []string{"put", "k"}, exitError, "not valid JSON"},
		{"unreachable server", `{"v":2}`, []string{"-server", "http://127.0.0.1:1/store", "put", "k"}, exitError, "unavailable"},
		{"unknown command", "", []string{"frobnicate"}, exitUsage, "unknown command"},
		{"missing key", "", []string{"get"}, exitUsage, "Usage"},
		{"-create with -rev", `{}`, []string{"put", "-create", "-rev", "3", "k"}, exitUsage, "Usage"},
		{"unknown flag", "", []string{"-nope", "get", "k"}, exitUsage, "Usage"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ctl(t, url, c.stdin, c.args...)
			require.Equal(t, c.code, r.code, "stderr: %s", r.stderr)
			require.Contains(t, r.stderr, c.in)
			require.Empty(t, r.stdout)
		})
	}
	got, err := m.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, obj.Revision, got.Revision, "a refused command wrote")
	// The read-only token reads.
	cmd := ctl(t, url, "", "-token", viewerToken, "get", "k")
	require.Equal(t, 0, cmd.code, cmd.stderr)
}

// TestWatchPrintsEveryChangeAsAJSONLineUntilInterrupted watches a prefix
// from a revision: the changes after it, and only under the prefix, arrive
// in order as JSON lines (a deletion with the last value); SIGINT ends the
// watch with exit code 0.
func TestWatchPrintsEveryChangeAsAJSONLineUntilInterrupted(t *testing.T) {
	m, url := serve(t)
	ctx := t.Context()
	before, err := m.Create(ctx, "jobs/old", value(`"before"`))
	require.NoError(t, err)

	cmd := exec.Command(binary, "-server", url, "-token", adminToken, "watch", "-after", fmt.Sprint(before.Revision), "jobs/")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	a, err := m.Create(ctx, "jobs/a", value(`{"n":1}`))
	require.NoError(t, err)
	_, err = m.Create(ctx, "other/x", value(`1`))
	require.NoError(t, err)
	a2, err := m.Update(ctx, "jobs/a", value(`{"n":2}`), a.Revision)
	require.NoError(t, err)
	del, err := m.Delete(ctx, "jobs/a", a2.Revision)
	require.NoError(t, err)

	want := []object{
		{Type: "created", Key: "jobs/a", Revision: a.Revision, CreateRevision: a.Revision, Value: value(`{"n":1}`)},
		{Type: "updated", Key: "jobs/a", Revision: a2.Revision, CreateRevision: a.Revision, Value: value(`{"n":2}`)},
		{Type: "deleted", Key: "jobs/a", Revision: del, CreateRevision: a.Revision, Value: value(`{"n":2}`)},
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	deadline := time.After(30 * time.Second)
	for i, w := range want {
		select {
		case line, ok := <-lines:
			require.True(t, ok, "watch ended after %d lines; stderr: %s", i, stderr.String())
			require.Equal(t, w, decodeObject(t, line))
		case <-deadline:
			t.Fatalf("line %d not printed within 30s; stderr: %s", i, stderr.String())
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	for range lines {
		t.Error("a line after the last change")
	}
	err = cmd.Wait()
	require.NoError(t, err, "stderr: %s", stderr.String())
	require.Empty(t, stderr.String())
}
