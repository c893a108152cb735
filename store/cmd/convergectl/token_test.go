package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/converge-go/converge/internal/tokenfile"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/stretchr/testify/require"
)

// secret is the token whose bytes must appear in no output.
const secret = "tok-5c1e7a9d-never-printed"

// serveToken serves a memory store over HTTP to the bearer of tok.
func serveToken(t *testing.T, tok string) (*store.Memory[value], string) {
	t.Helper()
	m := store.NewMemory[value]()
	t.Cleanup(func() { _ = m.Close() })
	h, err := httpstore.NewHandler[value](m, httpstore.WithReadWriteToken(tok))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return m, srv.URL
}

// cancelOnWrite cancels a watch once it has printed.
type cancelOnWrite struct {
	w      io.Writer
	cancel context.CancelFunc
}

func (c cancelOnWrite) Write(p []byte) (int, error) {
	defer c.cancel()
	return c.w.Write(p)
}

// commandLine is one run of convergectl and the exit code it must give.
type commandLine struct {
	stdin string
	args  []string
	code  int
}

// everyCommandLine lists every command, succeeding and failing, every
// kind of usage error and every help, run against m's server (named by
// $CONVERGE_SERVER, knowing the token), a stranger that does not know it,
// and a server that requires a client certificate.
func everyCommandLine(t *testing.T, m *store.Memory[value], stranger string, mtls tlsFiles, mtlsURL string) []commandLine {
	obj, err := m.Create(t.Context(), "k", value(`{"v":1}`))
	require.NoError(t, err)
	_, err = m.Create(t.Context(), "gone", value(`0`))
	require.NoError(t, err)
	rev := fmt.Sprint(obj.Revision)
	big := `"` + strings.Repeat("a", 10) + `"`
	lines := []commandLine{
		{"", []string{"-h"}, exitOK},
		{"", []string{"get", "k"}, exitOK},
		{"", []string{"list"}, exitOK},
		{"", []string{"list", "-keys", "k"}, exitOK},
		{`{"v":2}`, []string{"put", "-rev", rev, "k"}, exitOK},
		{`{"v":3}`, []string{"put", "k"}, exitOK},
		{`{"v":1}`, []string{"put", "-create", "k2"}, exitOK},
		{`{"w":1}`, []string{"apply", "k"}, exitOK},
		{`{"metadata":{"finalizers":["f"]},"spec":{"n":1}}`, []string{"apply", "res"}, exitOK},
		{"", []string{"get", "-o", "metadata", "res"}, exitOK},
		{`{"status":{"ready":true}}`, []string{"status", "res"}, exitError},
		{"", []string{"delete", "-propagation", "orphan", "res"}, exitError},
		{"", []string{"get", "-o", "yaml", "res"}, exitUsage},
		{"", []string{"delete", "gone"}, exitOK},
		{"", []string{"delete", "-rev", "1", "k2"}, exitConflict},
		{"", []string{"watch", "-after", "0"}, exitOK},
		{"", []string{"get", "missing"}, exitNotFound},
		{`{}`, []string{"put", "-create", "k"}, exitExists},
		{`{"v":`, []string{"put", "k"}, exitError},
		{big, []string{"-max-value-size", "4", "put", "k"}, exitError},
		{"", []string{"-server", stranger, "get", "k"}, exitRefused},
		{"", []string{"-server", "http://127.0.0.1:1/store", "get", "k"}, exitError},
		{"", []string{"-server", mtlsURL, "-cacert", mtls.ca, "get", "k"}, exitError},
		{"", []string{"-server", mtlsURL, "get", "k"}, exitError},
		{"", []string{}, exitUsage},
		{"", []string{"frobnicate"}, exitUsage},
		{"", []string{"-nope", "get", "k"}, exitUsage},
		{"", []string{"-timeout", "-1s", "get", "k"}, exitUsage},
		{"", []string{"-server", ":8080", "get", "k"}, exitUsage},
		{"", []string{"-cert", mtls.cert, "get", "k"}, exitUsage},
		{"", []string{"watch", "-after", "-1"}, exitUsage},
	}
	for _, cmd := range commands {
		lines = append(lines,
			commandLine{"", []string{cmd.name, "-h"}, exitOK},
			commandLine{"", []string{cmd.name, "-nope"}, exitUsage},
			commandLine{"", []string{cmd.name, "a", "b", "c"}, exitUsage})
	}
	return lines
}

// TestTheTokenAppearsInNoOutputOfAnyCommandOrError: given in
// $CONVERGE_TOKEN, in -token or in -token-file, the token is sent (the
// commands succeed) but its bytes are in no output of any command, error,
// usage error or help, on stdout or stderr.
func TestTheTokenAppearsInNoOutputOfAnyCommandOrError(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(secret+"\n"), 0o600))
	sources := []struct {
		name, env string
		flags     []string
	}{
		{"$CONVERGE_TOKEN", secret, nil},
		{"-token", "", []string{"-token", secret}},
		{"-token-file", secret, []string{"-token-file", tokenFile}},
	}
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			m, url := serveToken(t, secret)
			_, stranger := serveToken(t, "another-token")
			_, mtlsURL, mtls := serveMutualTLS(t, tls.VersionTLS13)
			t.Setenv("CONVERGE_SERVER", url)
			t.Setenv("CONVERGE_TOKEN", src.env)
			lines := everyCommandLine(t, m, stranger, mtls, mtlsURL)
			lines = append(lines, commandLine{"", []string{"-token", "x", "-token-file", tokenFile, "get", "k"}, exitUsage})
			for _, l := range lines {
				ctx, cancel := context.WithCancel(t.Context())
				var out, errOut strings.Builder
				code := run(ctx, append(append([]string{}, src.flags...), l.args...), strings.NewReader(l.stdin), cancelOnWrite{&out, cancel}, &errOut)
				cancel()
				require.Equal(t, l.code, code, "%v: %s", l.args, errOut.String())
				require.NotEmpty(t, out.String()+errOut.String(), "%v printed nothing", l.args)
				require.NotContains(t, out.String(), secret, "%v: stdout", l.args)
				require.NotContains(t, errOut.String(), secret, "%v: stderr", l.args)
			}
		})
	}
}

// TestNoServerNamedIsAUsageErrorThatSaysHowToNameOne: with neither -server
// nor $CONVERGE_SERVER, convergectl sends nothing anywhere and exits 2,
// saying how to name the server.
func TestNoServerNamedIsAUsageErrorThatSaysHowToNameOne(t *testing.T) {
	t.Setenv("CONVERGE_SERVER", "")
	t.Setenv("CONVERGE_TOKEN", "")
	for _, args := range [][]string{{"get", "k"}, {"list"}, {"watch"}} {
		r := runIn(t, t.Context(), strings.NewReader(""), args...)
		require.Equal(t, exitUsage, r.code, r.stderr)
		first, _, _ := strings.Cut(r.stderr, "\n")
		require.Equal(t, "convergectl: no server: give -server URL (such as -server http://127.0.0.1:7007/store) or set $CONVERGE_SERVER", first)
		require.Empty(t, r.stdout)
	}
}

// TestAnUnsafeTokenFileIsRefusedNamingItAndNeverShowingTheToken: a
// -token-file others may read, another user's, or a symbolic link is read
// as the daemons read theirs (internal/tokenfile) and refused: convergectl
// exits 1, naming the file as unsafe, sends nothing, and shows the token
// nowhere.
func TestAnUnsafeTokenFileIsRefusedNamingItAndNeverShowingTheToken(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, path string) string // returns the path to give
	}{
		{"readable by others", func(t *testing.T, path string) string {
			require.NoError(t, os.Chmod(path, 0o644))
			return path
		}},
		{"another user's", func(t *testing.T, path string) string {
			if os.Getuid() != 0 {
				t.Skip("skipped: giving a file to another user needs root")
			}
			require.NoError(t, os.Chown(path, 65534, 65534))
			return path
		}},
		{"a symbolic link", func(t *testing.T, path string) string {
			link := filepath.Join(t.TempDir(), "link")
			require.NoError(t, os.Symlink(path, link))
			return link
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, url := serveToken(t, secret)
			path := filepath.Join(t.TempDir(), "token")
			require.NoError(t, os.WriteFile(path, []byte(secret+"\n"), 0o600))
			given := tc.setup(t, path)
			r := ctl(t, url, `{"v":1}`, "-token-file", given, "put", "k")
			require.Equal(t, exitError, r.code, r.stderr)
			require.Contains(t, r.stderr, "convergectl: -token-file: "+tokenfile.ErrUnsafe.Error()+": "+given)
			require.NotContains(t, r.stdout+r.stderr, secret)
			_, err := m.Get(t.Context(), "k")
			require.ErrorIs(t, err, store.ErrNotFound, "a put was sent")
		})
	}
}
