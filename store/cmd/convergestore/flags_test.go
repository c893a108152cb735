package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runIn runs the command in this process, as main does, with ctx.
func runIn(ctx context.Context, args ...string) result {
	var out, errOut bytes.Buffer
	code := run(ctx, args, &out, &errOut)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

func TestCommandLinesThatCannotBeReadExitTwoNamingTheProblemBeforeTheUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no -dir given"},
		{[]string{"-dir", "DIR", "serve"}, `unexpected argument "serve"`},
		{[]string{"-dir", "DIR", "-no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"-dir", "DIR", "-addr", ""}, "-addr is empty"},
		{[]string{"-dir", "DIR", "-addr", "7017"}, `-addr "7017": want HOST:PORT`},
		{[]string{"-dir", "DIR", "-addr", "127.0.0.1:http"}, `-addr "127.0.0.1:http": want HOST:PORT`},
		{[]string{"-dir", "DIR", "-allow-host", "https://store.example"}, "-allow-host: "},
		{[]string{"-dir", "DIR", "-tls-cert", "c.pem"}, "-tls-cert and -tls-key go together"},
		{[]string{"-dir", "DIR", "-tls-key", "k.pem"}, "-tls-cert and -tls-key go together"},
		{[]string{"-dir", "DIR", "-client-ca", "ca.pem"}, "-client-ca needs -tls-cert"},
		{[]string{"-dir", "DIR", "-insecure-no-token", "-token-file", "f"}, "-insecure-no-token with -token-file"},
		{[]string{"-dir", "DIR", "-insecure-no-token", "-read-token-file", "f"}, "-insecure-no-token with -token-file or -read-token-file"},
		{[]string{"-dir", "DIR", "-token-file", ""}, "empty value"},
		{[]string{"-dir", "DIR", "-lock-timeout", "0s"}, "-lock-timeout 0s: want more than 0"},
		{[]string{"-dir", "DIR", "-heartbeat", "10us"}, "-heartbeat 10µs: want at least 1ms"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := slices.Clone(tc.args)
			if i := slices.Index(args, "DIR"); i >= 0 {
				args[i] = dir
			}
			r := runIn(t.Context(), args...)
			if r.code != exitUsage {
				t.Errorf("exit %d; want %d\n%s", r.code, exitUsage, r.stderr)
			}
			first, rest, _ := strings.Cut(r.stderr, "\n")
			if !strings.HasPrefix(first, "convergestore: ") || !strings.Contains(first, tc.want) {
				t.Errorf("first line %q; want the problem, %q", first, tc.want)
			}
			if !strings.Contains(rest, "Usage: convergestore -dir DIR") || r.stdout != "" {
				t.Errorf("no usage after the problem, or output on stdout:\n%s\nstdout: %q", r.stderr, r.stdout)
			}
		})
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
		t.Errorf("a refused command line made files in -dir: %v %v", entries, err)
	}
}

func TestHelpPrintsTheUsageWithEveryFlagAndTheExitCodesOnStdoutAndExitsZero(t *testing.T) {
	r := runIn(t.Context(), "-h")
	if r.code != exitOK || r.stderr != "" {
		t.Fatalf("-h: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{"-dir", "-addr", "-tls-cert", "-tls-key", "-client-ca", "-token-file", "-read-token-file",
		"-insecure-no-token", "-allow-host", "-lock-timeout", "-heartbeat", defaultAddr, "Exit codes: 0"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the usage lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestRunServesUntilItsContextEndsThenReturnsZeroAndLeavesNothingRunning(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan result, 1)
	go func() { done <- runIn(ctx, "-dir", dir, "-addr", "127.0.0.1:0") }()
	// The token file appears once the server holds the store.
	waitFor(t, "the token file", func() bool {
		_, err := os.Stat(filepath.Join(dir, TokenFile))
		return err == nil
	})
	cancel()
	r := <-done
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("-dir made with mode %v (%v); want 0700", fi.Mode().Perm(), err)
	}
	if !strings.Contains(r.stderr, "msg=stopped") {
		t.Errorf("no stop in the log:\n%s", r.stderr)
	}
	// TestMain's goleak check finds what the server left running.
}
