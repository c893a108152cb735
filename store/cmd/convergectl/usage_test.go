package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEveryUsageErrorNamesTheProblemOnOneLineBeforeTheUsageAndSendsNothing:
// a command line that cannot be read exits 2 with one line saying what is
// wrong, then the usage (the command's, for a command's arguments), prints
// nothing on stdout, and sends no request.
func TestEveryUsageErrorNamesTheProblemOnOneLineBeforeTheUsageAndSendsNothing(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "no", http.StatusTeapot)
	}))
	t.Cleanup(srv.Close)
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("t"), 0o600))
	cases := []struct {
		args  []string
		first string // the line before the usage
		usage string // how the usage starts
	}{
		{[]string{"put", "a", "b", "c"}, "put: want KEY [FILE], got 3 arguments", "Usage: convergectl [flags] put [-create] [-rev R] KEY [FILE]"},
		{[]string{"get"}, "get: want KEY, got no arguments", "Usage: convergectl [flags] get KEY"},
		{[]string{"delete", "a", "b"}, "delete: want KEY, got 2 arguments", "Usage: convergectl [flags] delete [-rev R] KEY"},
		{[]string{"list", "a", "b"}, "list: want [PREFIX], got 2 arguments", "Usage: convergectl [flags] list [-keys] [-o table] [PREFIX]"},
		{[]string{"put", "-nope", "k"}, "put: flag provided but not defined: -nope", "Usage: convergectl [flags] put"},
		{[]string{"put", "-rev", "x", "k"}, `put: invalid value "x" for flag -rev: parse error`, "Usage: convergectl [flags] put"},
		{[]string{"put", "-rev", "0", "k"}, "put: -rev 0: want a revision, 1 or more", "Usage: convergectl [flags] put"},
		{[]string{"put", "-create", "-rev", "3", "k"}, "put: -create and -rev together: a key to create has no revision yet", "Usage: convergectl [flags] put"},
		{[]string{"delete", "-rev", "-2", "k"}, "delete: -rev -2: want a revision, 1 or more", "Usage: convergectl [flags] delete"},
		{[]string{"delete", "-rev", "0", "k"}, "delete: -rev 0: want a revision, 1 or more", "Usage: convergectl [flags] delete"},
		{[]string{"watch", "-after", "-1"}, "watch: -after -1: want a revision, 0 or more", "Usage: convergectl [flags] watch [-after R] [PREFIX]"},
		{[]string{}, "no command given", "Usage: convergectl [flags] COMMAND [ARGS]"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`, "Usage: convergectl [flags] COMMAND"},
		{[]string{"-nope", "get", "k"}, "flag provided but not defined: -nope", "Usage: convergectl [flags] COMMAND"},
		{[]string{"-timeout", "-1s", "get", "k"}, "-timeout -1s: want 0 (no bound) or more", "Usage: convergectl [flags] COMMAND"},
		{[]string{"-max-value-size", "0", "put", "k"}, "-max-value-size 0: want 1 or more", "Usage: convergectl [flags] COMMAND"},
		{[]string{"-token", "t", "-token-file", tokenFile, "get", "k"}, "-token and -token-file together: give one", "Usage: convergectl [flags] COMMAND"},
		{[]string{"-cert", tokenFile, "get", "k"}, "-cert and -key go together", "Usage: convergectl [flags] COMMAND"},
		{[]string{"-server", ":8080", "get", "k"}, "-server: missing protocol scheme: " + wantURL, "Usage: convergectl [flags] COMMAND"},
		{[]string{"-server", "localhost:8080", "get", "k"}, "-server localhost:8080: " + wantURL, "Usage: convergectl [flags] COMMAND"},
		{[]string{"-server", "http://admin:pw-in-url@127.0.0.1:1/store", "get", "k"}, "-server http://admin:xxxxx@127.0.0.1:1/store: a URL with a user or password; give the token with -token-file or $CONVERGE_TOKEN", "Usage: convergectl [flags] COMMAND"},
		{[]string{"-server", srv.URL + "/store?token=pw-in-url", "get", "k"}, "-server: a URL with a query or fragment: " + wantURL, "Usage: convergectl [flags] COMMAND"},
	}
	for _, c := range cases {
		r := runAs(t, srv.URL, "", c.args...)
		require.Equal(t, exitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Empty(t, r.stdout, c.args)
		first, rest, _ := strings.Cut(r.stderr, "\n")
		require.Equal(t, "convergectl: "+c.first, first, c.args)
		require.True(t, strings.HasPrefix(rest, c.usage), "%v: the usage does not follow:\n%s", c.args, r.stderr)
	}
	require.Zero(t, requests.Load(), "a command line that cannot be read sent a request")
}

// TestHelpPrintsTheUsageOnStdoutAndExitsZero: -h, before a command or
// after one, is a request, not an error: the usage goes to stdout, with
// the exit code 0.
func TestHelpPrintsTheUsageOnStdoutAndExitsZero(t *testing.T) {
	_, url := serve(t)
	r := runAs(t, url, "", "-h")
	require.Equal(t, exitOK, r.code)
	require.Empty(t, r.stderr)
	require.True(t, strings.HasPrefix(r.stdout, "Usage: convergectl [flags] COMMAND [ARGS]\n"), r.stdout)
	require.Contains(t, r.stdout, "$CONVERGE_TOKEN", "-h does not say where the token is read from")
	require.Contains(t, r.stdout, "$CONVERGE_SERVER")
	for _, cmd := range commands {
		r := runAs(t, url, "", cmd.name, "-h")
		require.Equal(t, exitOK, r.code, cmd.name)
		require.Empty(t, r.stderr, cmd.name)
		require.True(t, strings.HasPrefix(r.stdout, "Usage: convergectl [flags] "+cmd.synopsis()+"\n"), r.stdout)
	}
}

// TestTimeoutZeroMeansNoBound: -timeout 0 bounds a request by nothing
// (the command succeeds), where a positive one bounds each request.
func TestTimeoutZeroMeansNoBound(t *testing.T) {
	m, url := serve(t)
	r := runAs(t, url, `{"v":1}`, "-timeout", "0", "put", "k")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = runAs(t, url, "", "-timeout", "0", "get", "k")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "k", decodeObject(t, r.stdout).Key)
	_, err := m.Get(t.Context(), "k")
	require.NoError(t, err)
}

// namesAPackageTwice reports whether msg names convergectl, httpstore or
// store as a prefix ("store: ") more than once.
func namesAPackageTwice(msg string) bool {
	for _, pkg := range []string{"convergectl", "httpstore", "store"} {
		if len(regexp.MustCompile(`\b`+pkg+`: `).FindAllString(msg, -1)) > 1 {
			return true
		}
	}
	return false
}

// TestAnErrorIsOneLineNamingConvergectlOnce: convergectl's own errors, the
// store's and the client's are each printed as one line that starts with
// "convergectl: " and names no package twice.
func TestAnErrorIsOneLineNamingConvergectlOnce(t *testing.T) {
	m, url := serve(t)
	_, err := m.Create(t.Context(), "k", value(`1`))
	require.NoError(t, err)
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	cases := []struct {
		stdin string
		args  []string
	}{
		{`{"v":`, []string{"put", "k"}},
		{`"toolong"`, []string{"-max-value-size", "3", "put", "k"}},
		{"", []string{"put", "k", filepath.Join(t.TempDir(), "no-such-file")}},
		{"", []string{"-token-file", empty, "get", "k"}},
		{"", []string{"-cacert", empty, "get", "k"}},
		{"", []string{"get", "missing"}},
		{`1`, []string{"put", "-create", "k"}},
		{"", []string{"-token", "nope", "get", "k"}},
		{"", []string{"-server", "http://127.0.0.1:1/store", "get", "k"}},
	}
	for _, c := range cases {
		r := runAs(t, url, c.stdin, c.args...)
		require.NotEqual(t, exitOK, r.code, c.args)
		require.Regexp(t, `^convergectl: [^\n]+\n$`, r.stderr, c.args)
		require.False(t, namesAPackageTwice(r.stderr), "%v: %s", c.args, r.stderr)
	}
}
