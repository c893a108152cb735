package main

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/internal/poll"
	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/internal/testcerts"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore"
)

// storeServer is a store served in the test as a store server serves one:
// JSON values with the API-server layer over them (apistore.JSONKind,
// which knows nothing of jobs), behind a token, on loopback.
type storeServer struct {
	url, tokenFile string
	// certs, for a server run with TLS: its CA, and a client certificate.
	certs testcerts.Certs
}

// startStoreServer serves a fresh store until the test ends; withTLS serves
// HTTPS and requires a client certificate its CA signed.
func startStoreServer(t *testing.T, withTLS bool) storeServer {
	t.Helper()
	layer, err := apistore.New(store.NewView[json.RawMessage](store.NewMemory[[]byte](), nil), apistore.JSONKind{})
	require.NoError(t, err)
	const token = "store-s3cret"
	h, err := httpstore.NewHandler[json.RawMessage](layer, httpstore.WithReadWriteToken(token))
	require.NoError(t, err)
	dir := t.TempDir()
	srv := storeServer{tokenFile: filepath.Join(dir, "token")}
	require.NoError(t, os.WriteFile(srv.tokenFile, []byte(token+"\n"), 0o600))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := &http.Server{Handler: http.StripPrefix("/store", h), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)} // the refused handshake of the TLS test
	scheme := "http"
	if withTLS {
		scheme = "https"
		srv.certs, hs.TLSConfig = serverTLS(t, dir)
	}
	srv.url = scheme + "://" + ln.Addr().String() + "/store"
	done := make(chan error, 1)
	go func() {
		if withTLS {
			done <- hs.ServeTLS(ln, "", "")
		} else {
			done <- hs.Serve(ln)
		}
	}()
	t.Cleanup(func() {
		// Watches stay open: end them with the connections.
		require.NoError(t, hs.Close())
		require.ErrorIs(t, <-done, http.ErrServerClosed)
	})
	return srv
}

// serverTLS writes certificates to dir and returns them with a server
// configuration that requires a client certificate their CA signed.
func serverTLS(t *testing.T, dir string) (testcerts.Certs, *tls.Config) {
	t.Helper()
	certs, err := testcerts.Write(dir)
	require.NoError(t, err)
	return certs, &tls.Config{Certificates: []tls.Certificate{certs.Server}, ClientCAs: certs.Roots, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
}

// daemonArgs are the flags of a daemon on srv.
func (srv storeServer) daemonArgs() []string {
	args := []string{"-store-server", srv.url, "-store-token-file", srv.tokenFile, "-grace", "500ms"}
	if srv.certs.CA != "" {
		args = append(args, "-store-ca", srv.certs.CA, "-store-cert", srv.certs.ClientCert, "-store-key", srv.certs.ClientKey)
	}
	return args
}

// client returns a client of srv, as a daemon on it has.
func (srv storeServer) client(t *testing.T) *httpstore.Client[*Job] {
	t.Helper()
	tok, _, err := readTokenFile(srv.tokenFile)
	require.NoError(t, err)
	opts := []httpstore.ClientOption{httpstore.WithToken(tok)}
	if srv.certs.CA != "" {
		cfg, err := storeTLS(srv.certs.CA, srv.certs.ClientCert, srv.certs.ClientKey)
		require.NoError(t, err)
		opts = append(opts, httpstore.WithTLSConfig(cfg))
	}
	c, err := httpstore.New[*Job](srv.url, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// waitSucceeded waits until job name of s has succeeded.
func waitSucceeded(t *testing.T, s store.Store[*Job], name string) *Job {
	t.Helper()
	var job *Job
	err := poll.Until(t.Context(), time.Minute, 20*time.Millisecond, name+" succeeded", func() (bool, error) {
		obj, err := s.Get(t.Context(), KeyPrefix+name)
		if err != nil {
			return false, err
		}
		job = obj.Value
		return job.Status.Phase == Succeeded, nil
	})
	require.NoError(t, err)
	return job
}

// TestDaemonOnAStoreServerRunsAJobAddedWhileItWasDownAndServesNoStore: a
// job added through a store server (with "jobs add -server -token-file")
// while no daemon runs is run, once, by the daemon started with
// -store-server; the layer is the server's (the job's finalizer, its
// generation); the daemon serves no store of its own, only its debug page
// and probes.
func TestDaemonOnAStoreServerRunsAJobAddedWhileItWasDownAndServesNoStore(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	srv := startStoreServer(t, false)
	dir := t.TempDir()
	taskLog := filepath.Join(dir, "tasks.log")
	out, code := jobsCmd(t, nil, "add", "-server", srv.url, "-token-file", srv.tokenFile, "early", "--", exe, taskArg, taskLog, "early", "ok")
	require.Equal(t, 0, code, out)

	var logs syncbuf.Buffer
	d, err := startDaemon(t.Context(), exe, []string{testMainEnv + "=1", "JOBS_TOKEN="}, dir, &logs, time.Minute, srv.daemonArgs()...)
	require.NoError(t, err, logs.String())
	defer d.Kill()
	job := waitSucceeded(t, srv.client(t), "early")
	require.Equal(t, 1, countStarts(taskLog, "early"))
	require.True(t, job.HasFinalizer(Finalizer))
	require.Equal(t, int64(1), job.Generation)
	require.Equal(t, int64(1), job.ObservedGeneration)

	require.Empty(t, d.url, "a daemon on a store server wrote "+URLFile)
	token := daemonTokenOf(t, dir)
	code, body := httpGet(t, d.base+StorePath+"/v1/list?prefix=jobs/", "", token)
	require.Equal(t, http.StatusNotFound, code, "the daemon serves a store: %s", body)
	code, body = httpGet(t, d.base+DebugPath+"?format=json", "", token)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"jobs"`)

	out, code = jobsCmd(t, nil, "list", "-server", srv.url, "-token-file", srv.tokenFile)
	require.Equal(t, 0, code, out)
	require.Regexp(t, `early\s+Succeeded\s+1/1\s+0\s`, out)
	require.NoError(t, d.Stop(time.Minute))
}

// TestJobDeletedThroughAStoreServerWhileTheDaemonIsDownIsStoppedWhenItStarts:
// with the daemon SIGKILLed while a job's attempt runs, "jobs delete"
// through the store server says the job is only marked, waiting for its
// attempt to stop; the attempt runs on, "jobs list" shows the job
// Deleting, and it cannot be added again meanwhile. The next daemon stops
// the attempt, and the job is gone.
func TestJobDeletedThroughAStoreServerWhileTheDaemonIsDownIsStoppedWhenItStarts(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	srv := startStoreServer(t, false)
	c := srv.client(t)
	dir := t.TempDir()
	taskLog := filepath.Join(dir, "tasks.log")
	env := []string{testMainEnv + "=1", "JOBS_TOKEN="}
	var logs syncbuf.Buffer
	d, err := startDaemon(t.Context(), exe, env, dir, &logs, time.Minute, srv.daemonArgs()...)
	require.NoError(t, err, logs.String())
	defer func() { d.Kill() }()
	_, _, err = addJob(t.Context(), c, "orphan", hangJob(exe, taskLog, "orphan"))
	require.NoError(t, err)
	pid := runningPID(t, c, taskLog, "orphan")
	d.Kill()

	client := []string{"-server", srv.url, "-token-file", srv.tokenFile}
	out, code := jobsCmd(t, nil, append(append([]string{"delete"}, client...), "-wait", "200ms", "orphan")...)
	require.Equal(t, 0, code, out)
	require.Equal(t, "orphan marked for deletion: waiting for its attempt (pid "+strconv.Itoa(pid)+") to stop; the daemon removes it then\n", out)
	require.NotEmpty(t, groupMembers(pid), "the attempt stopped with no daemon running")
	out, code = jobsCmd(t, nil, append([]string{"list"}, client...)...)
	require.Equal(t, 0, code, out)
	require.Regexp(t, `orphan\s+Deleting\s`, out)
	out, code = jobsCmd(t, nil, append(append([]string{"add"}, client...), "orphan", "--", "true")...)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "being deleted")

	d, err = startDaemon(t.Context(), exe, env, dir, &logs, time.Minute, srv.daemonArgs()...)
	require.NoError(t, err, logs.String())
	waitGoneAndStopped(t, c, "orphan", pid)
	require.Equal(t, 1, countStarts(taskLog, "orphan"))
	require.NoError(t, d.Stop(time.Minute))
}

// TestDaemonReachesAStoreServerOverMutualTLS: with -store-ca, -store-cert
// and -store-key, the daemon runs the jobs of a store server that serves
// HTTPS and requires a client certificate.
func TestDaemonReachesAStoreServerOverMutualTLS(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	srv := startStoreServer(t, true)
	c := srv.client(t)
	dir := t.TempDir()
	taskLog := filepath.Join(dir, "tasks.log")
	_, _, err = addJob(t.Context(), c, "secure", Spec{Command: exe, Args: []string{taskArg, taskLog, "secure", "ok"}})
	require.NoError(t, err)
	noCert, err := storeTLS(srv.certs.CA, "", "")
	require.NoError(t, err)
	plain, err := httpstore.New[*Job](srv.url, httpstore.WithToken("store-s3cret"), httpstore.WithTLSConfig(noCert))
	require.NoError(t, err)
	defer plain.Close()
	_, err = plain.Get(t.Context(), KeyPrefix+"secure")
	require.Error(t, err, "the store server served a client without a certificate")

	var logs syncbuf.Buffer
	d, err := startDaemon(t.Context(), exe, []string{testMainEnv + "=1", "JOBS_TOKEN="}, dir, &logs, time.Minute, srv.daemonArgs()...)
	require.NoError(t, err, logs.String())
	defer d.Kill()
	waitSucceeded(t, c, "secure")
	require.Equal(t, 1, countStarts(taskLog, "secure"))
	require.NoError(t, d.Stop(time.Minute))
	require.False(t, strings.Contains(logs.String(), "store-s3cret"), "the store token was logged")
}

// A store flag without -store-server, or a client certificate without its
// key, is refused before the daemon starts.
func TestDaemonRefusesStoreFlagsItCannotUse(t *testing.T) {
	dir := t.TempDir()
	out, code := jobsCmd(t, nil, "daemon", "-dir", dir, "-store-token-file", filepath.Join(dir, "token"))
	require.Equal(t, 2, code, out)
	out, code = jobsCmd(t, nil, "daemon", "-dir", dir, "-store-server", "https://127.0.0.1:1/store", "-store-cert", filepath.Join(dir, "cert.pem"))
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "-store-cert and -store-key go together")
	_, err := os.Stat(filepath.Join(dir, HTTPFile))
	require.ErrorIs(t, err, os.ErrNotExist, "a daemon started")
}

// A daemon on a store server holds its directory, as a daemon with its own
// store holds its bbolt file: a second one in the same directory is
// refused until the first lets go.
func TestOneDaemonAtATimeHoldsADirectory(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockDir(dir, 0)
	require.NoError(t, err)
	_, err = lockDir(dir, 100*time.Millisecond)
	require.ErrorContains(t, err, "another daemon runs in "+dir)
	require.NoError(t, unlock())
	unlock, err = lockDir(dir, 0)
	require.NoError(t, err)
	require.NoError(t, unlock())
}
