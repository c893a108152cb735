package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/store/apistore"

	"github.com/stretchr/testify/require"
)

// tooLongArg is one argument longer than Linux takes (MAX_ARG_STRLEN,
// 128 KiB): exec fails with E2BIG.
var tooLongArg = strings.Repeat("x", 200<<10)

func TestCommandTheShimCannotStartEndsAsAFailedAttemptThatSaysWhy(t *testing.T) {
	notExecutable := filepath.Join(t.TempDir(), "script")
	require.NoError(t, os.WriteFile(notExecutable, []byte("#!/bin/sh\n"), 0o600))
	for _, tc := range []struct{ name, command, why string }{
		{"notfound", filepath.Join(t.TempDir(), "no-such-program"), "no such file or directory"},
		{"notexecutable", notExecutable, "permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newRecoveryEnv(t)
			obj, err := e.s.Create(t.Context(), KeyPrefix+tc.name, &Job{Meta: apistore.Meta{Generation: 1}, Spec: Spec{Command: tc.command}})
			require.NoError(t, err)
			_, obj = e.reconcile(obj.Key)
			st := obj.Value.Status
			require.Equal(t, Failed, st.Phase, st.Message)
			require.Equal(t, 1, st.Attempts)
			require.Equal(t, -1, *st.ExitCode)
			require.Contains(t, st.Message, "could not start")
			require.Contains(t, st.Message, tc.why)
			require.True(t, runFiles{dir: e.runs, id: st.RunID}.claimed(), "the shim did not run")
		})
	}
}

func TestAttemptWhoseShimCannotStartEndsAsAFailedAttemptThatSaysWhy(t *testing.T) {
	e := newRecoveryEnv(t)
	obj, err := e.s.Create(t.Context(), KeyPrefix+"e2big", &Job{Meta: apistore.Meta{Generation: 1}, Spec: Spec{Command: "echo", Args: []string{tooLongArg}}})
	require.NoError(t, err)
	_, obj = e.reconcile(obj.Key)
	st := obj.Value.Status
	require.Equal(t, Failed, st.Phase, st.Message)
	require.Equal(t, 1, st.Attempts)
	require.Equal(t, -1, *st.ExitCode)
	require.Contains(t, st.Message, "could not start")
	require.Contains(t, st.Message, "argument list too long")

	// The outcome is recorded where a restarted daemon judges it.
	files := runFiles{dir: e.runs, id: st.RunID}
	require.False(t, files.claimed(), "a shim ran")
	res, ok, err := files.readResult()
	require.NoError(t, err)
	require.True(t, ok, "no result file")
	require.Contains(t, res.Error, "argument list too long")
}

func TestAttemptThatCannotStartIsRetriedWhileRetriesLeft(t *testing.T) {
	e := newRecoveryEnv(t)
	obj, err := e.s.Create(t.Context(), KeyPrefix+"retry", &Job{Meta: apistore.Meta{Generation: 1}, Spec: Spec{Command: "echo", Args: []string{tooLongArg}, Retries: 1}})
	require.NoError(t, err)
	res, obj := e.reconcile(obj.Key)
	st := obj.Value.Status
	require.Equal(t, Backoff, st.Phase, st.Message)
	require.Contains(t, st.Message, "could not start")
	require.Positive(t, res.RequeueAfter)
}

func TestJobsWaitExitsOneForAJobWhoseCommandCannotStart(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	var logs syncbuf.Buffer
	d, err := startDaemon(t.Context(), exe, []string{testMainEnv + "=1", "JOBS_TOKEN="}, dir, &logs, time.Minute)
	require.NoError(t, err)
	defer d.Kill()
	_, err = dirClient(t, dir, d.url).Create(t.Context(), KeyPrefix+"e2big", &Job{Meta: apistore.Meta{Generation: 1}, Spec: Spec{Command: "echo", Args: []string{tooLongArg}}})
	require.NoError(t, err)
	out, code := jobsCmd(t, nil, "wait", "-dir", dir, "e2big")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "e2big: Failed: attempt 1 of 1 failed: could not start")
	require.Contains(t, out, "argument list too long")
}
