package procs_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/converge-go/converge/examples/internal/procs"
	"github.com/converge-go/converge/examples/internal/procstat"
)

// childEnv runs the test binary as a child in a mode: "term:CODE" (says
// "ready", then exits with CODE on SIGTERM), "deaf" (says "ready",
// ignores SIGTERM, runs until killed), "exit:CODE" (exits at once with
// CODE), "group" (starts a "deaf" child, says its pid, then "ready", and
// runs until killed), "serve:FILE:NOT" (serves, answers its first NOT readiness
// probes 503 and then 200, writes its base URL to FILE, runs until
// SIGTERM; /probes says how many probes came).
const childEnv = "PROCS_TEST_CHILD"

// patience bounds each wait: a hang guard, not a claim about speed.
const patience = time.Minute

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	goleak.VerifyTestMain(m)
}

func runChild(mode string) int {
	kind, arg, _ := strings.Cut(mode, ":")
	switch kind {
	case "term":
		code, _ := strconv.Atoi(arg)
		waitSignal(syscall.SIGTERM, "ready")
		return code
	case "deaf":
		signal.Ignore(syscall.SIGTERM)
		waitSignal(syscall.SIGUSR1, "ready") // never sent: until killed
		return 0
	case "exit":
		code, _ := strconv.Atoi(arg)
		return code
	case "group":
		grandchild := child("deaf")
		grandchild.Stdout = nil
		grandchild.SysProcAttr = nil // it must end by its group's kill alone
		if err := grandchild.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(grandchild.Process.Pid)
		waitSignal(syscall.SIGUSR1, "ready") // never sent: until killed
		return 0
	case "serve":
		file, not, _ := strings.Cut(arg, ":")
		n, _ := strconv.Atoi(not)
		if err := serve(file, int64(n)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	return 2
}

// waitSignal prints say and blocks until sig arrives: waiting on a
// signal, not a timer, the child holds no clock.
func waitSignal(sig os.Signal, say string) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, sig)
	fmt.Println(say)
	<-c
}

// serve is the "serve" mode: see childEnv.
func serve(file string, notReady int64) error {
	var probes atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc(procs.ReadyPath, func(w http.ResponseWriter, _ *http.Request) {
		if probes.Add(1) <= notReady {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("/probes", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, probes.Load()) })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = http.Serve(l, mux) }()
	if err := os.WriteFile(file, []byte("http://"+l.Addr().String()+"\n"), 0o600); err != nil {
		return err
	}
	waitSignal(syscall.SIGTERM, "")
	return nil
}

// child is the test binary in mode, killed if the test's process ends
// first.
func child(mode string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// startReady starts cmd, a child, and returns once it said "ready" (its
// signal handling is in place), with the lines it said before.
func startReady(t *testing.T, cmd *exec.Cmd) (*procs.Proc, []string) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	p, err := procs.Start(cmd)
	require.NoError(t, err)
	r := bufio.NewReader(out)
	var said []string
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		if line == "ready\n" {
			return p, said
		}
		said = append(said, strings.TrimSpace(line))
	}
}

// startChild starts a child in mode and returns once it said "ready".
func startChild(t *testing.T, mode string) *procs.Proc {
	t.Helper()
	p, _ := startReady(t, child(mode))
	return p
}

// requireReaped checks that pid no longer names a process: it has been
// reaped, not left a zombie.
func requireReaped(t *testing.T, pid int) {
	t.Helper()
	_, ok := procstat.Read(pid)
	require.False(t, ok, "pid %d still in the process table", pid)
}

func TestStopReturnsHowAProcessThatHonoursSIGTERMEnded(t *testing.T) {
	p := startChild(t, "term:0")
	require.NoError(t, p.Stop(patience))
	requireReaped(t, p.Pid())
	p = startChild(t, "term:3")
	err := p.Stop(patience)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 3, exit.ExitCode())
	assert.Equal(t, err, p.Err())
	requireReaped(t, p.Pid())
}

func TestStopKillsAProcessThatIgnoresSIGTERMOnceTheLimitHasPassed(t *testing.T) {
	p := startChild(t, "deaf")
	err := p.Stop(100 * time.Millisecond)
	require.ErrorIs(t, err, procs.ErrKilled)
	var exit *exec.ExitError
	require.ErrorAs(t, p.Err(), &exit)
	assert.Equal(t, syscall.SIGKILL, exit.Sys().(syscall.WaitStatus).Signal())
	requireReaped(t, p.Pid())
}

func TestKillEndsTheProcessWithSIGKILLAndReapsIt(t *testing.T) {
	p := startChild(t, "term:0")
	p.Kill()
	select {
	case <-p.Done():
	default:
		t.Fatal("Done not closed after Kill")
	}
	var exit *exec.ExitError
	require.ErrorAs(t, p.Err(), &exit)
	assert.Equal(t, syscall.SIGKILL, exit.Sys().(syscall.WaitStatus).Signal())
	requireReaped(t, p.Pid())
	p.Kill() // an ended process: nothing happens
}

func TestStartServingReturnsOnlyOnceTheServerAnswersReady(t *testing.T) {
	file := filepath.Join(t.TempDir(), "url")
	p, base, err := procs.StartServing(t.Context(), child("serve:"+file+":2"), file, patience)
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Stop(patience)) }()
	code, body := procs.Get(t.Context(), base+"/probes")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "3", body, "two probes answered 503, the third 200")
}

func TestStartServingNeverTakesAURLFileAnEarlierProcessLeft(t *testing.T) {
	stale := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer stale.Close()
	file := filepath.Join(t.TempDir(), "url")
	require.NoError(t, os.WriteFile(file, []byte(stale.URL+"\n"), 0o600))
	p, base, err := procs.StartServing(t.Context(), child("serve:"+file+":0"), file, patience)
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Stop(patience)) }()
	assert.NotEqual(t, stale.URL, base)
	assert.Equal(t, http.StatusOK, procs.Probe(t.Context(), base+procs.ReadyPath))
}

func TestStartServingSaysHowAProcessThatEndedFirstEnded(t *testing.T) {
	file := filepath.Join(t.TempDir(), "url")
	p, _, err := procs.StartServing(t.Context(), child("exit:3"), file, patience)
	require.ErrorIs(t, err, procs.ErrExited)
	assert.Contains(t, err.Error(), "exit status 3")
	assert.Nil(t, p)
}

func TestStartServingKillsAProcessNeverReadyWhenItsContextEnds(t *testing.T) {
	file := filepath.Join(t.TempDir(), "url")
	ctx, cancel := context.WithCancel(t.Context())
	// The child answers 503 for ever; once it has written its URL, the
	// wait is cancelled.
	go func() {
		for {
			if b, err := os.ReadFile(file); err == nil && len(b) > 0 {
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	p, _, err := procs.StartServing(ctx, child("serve:"+file+":1000000"), file, patience)
	require.Error(t, err)
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	assert.Nil(t, p)
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Zero(t, procs.Probe(t.Context(), strings.TrimSpace(string(b))+procs.ReadyPath), "the process was killed")
}

func TestKillEndsTheGroupOfAProcessThatLeadsOne(t *testing.T) {
	cmd := child("group")
	cmd.SysProcAttr.Setpgid = true
	p, said := startReady(t, cmd)
	require.Len(t, said, 1)
	grandchild, err := strconv.Atoi(said[0])
	require.NoError(t, err)
	st, ok := procstat.Read(grandchild)
	require.True(t, ok)
	require.Equal(t, p.Pid(), st.Pgrp, "the grandchild is in the child's group")
	p.Kill()
	requireReaped(t, p.Pid())
	// The grandchild, not ours, is reaped by init once it has ended.
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	for {
		if st, ok := procstat.Read(grandchild); !ok || st.Ended() {
			return
		}
		select {
		case <-ctx.Done():
			_ = syscall.Kill(grandchild, syscall.SIGKILL)
			t.Fatal("the grandchild outlived its group's kill")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestSignalReachesTheProcessAndFailsOnceItIsReaped(t *testing.T) {
	p := startChild(t, "term:0")
	require.NoError(t, p.Signal(syscall.SIGTERM))
	require.NoError(t, p.Err())
	assert.ErrorIs(t, p.Signal(syscall.SIGTERM), os.ErrProcessDone)
}
