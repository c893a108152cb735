package etcdstore_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// This file runs etcd as users run it: a cluster of separate etcd server
// processes on loopback, built from the server module this module
// requires, whose members the tests kill (SIGKILL), freeze (SIGSTOP, a
// process that stops answering without closing its connections, as a
// paused VM or a partition would) and restart. It depends on nothing but
// the standard library, etcd's client and zap, so that a copy can move to
// a shared test package.

// etcdBin is the etcd server binary, built once per test binary run into
// a directory removed by TestMain.
var etcdBin = struct {
	once sync.Once
	dir  string
	path string
	err  error
}{}

// etcdBinary returns the path of the etcd server binary, building it the
// first time (minutes on a cold build cache).
func etcdBinary(t testing.TB) string {
	t.Helper()
	etcdBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "etcdstore-etcd-")
		if err != nil {
			etcdBin.err = err
			return
		}
		etcdBin.dir = dir
		path := filepath.Join(dir, "etcd")
		out, err := exec.Command("go", "build", "-o", path, "go.etcd.io/etcd/server/v3").CombinedOutput()
		if err != nil {
			etcdBin.err = fmt.Errorf("go build go.etcd.io/etcd/server/v3: %w\n%s", err, out)
			return
		}
		etcdBin.path = path
	})
	if etcdBin.err != nil {
		t.Fatalf("etcd server binary: %v", etcdBin.err)
	}
	return etcdBin.path
}

// removeEtcdBinary removes the binary built by etcdBinary, if any.
func removeEtcdBinary() {
	if etcdBin.dir != "" {
		_ = os.RemoveAll(etcdBin.dir)
	}
}

// proc is one etcd member running as a process.
type proc struct {
	name   string
	client string // client URL
	args   []string
	log    string // file receiving the process's output

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when the running process has exited
}

// procCluster is a cluster of etcd processes on loopback.
type procCluster struct {
	t       testing.TB
	bin     string
	members []*proc
}

// startProcCluster starts an n-member cluster with fast raft timings
// (10 ms heartbeats, 100 ms election timeout), each member's data in a
// temporary directory, and waits until it serves a linearizable read. Every
// process is killed at cleanup. Tests that use it are skipped with -short.
func startProcCluster(t testing.TB, n int) *procCluster {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a cluster of etcd processes")
	}
	c := &procCluster{t: t, bin: etcdBinary(t)}
	addrs := freePorts(t, 2*n)
	var initial []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("p%d=http://%s", i, addrs[2*i+1]))
	}
	dir := t.TempDir()
	for i := range n {
		name := fmt.Sprintf("p%d", i)
		client, peer := "http://"+addrs[2*i], "http://"+addrs[2*i+1]
		p := &proc{
			name:   name,
			client: client,
			log:    filepath.Join(dir, name+".log"),
			args: []string{
				"--name", name,
				"--data-dir", filepath.Join(dir, name),
				"--listen-client-urls", client, "--advertise-client-urls", client,
				"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
				"--initial-cluster", strings.Join(initial, ","),
				"--initial-cluster-token", "procs",
				"--initial-cluster-state", "new",
				"--heartbeat-interval", "10", "--election-timeout", "100",
				"--unsafe-no-fsync", "--log-level", "error",
			},
		}
		c.members = append(c.members, p)
	}
	t.Cleanup(c.stopAll)
	for i := range c.members {
		c.Start(i)
	}
	c.WaitServing(c.Endpoints()...)
	return c
}

// Endpoints returns the client URLs of the members whose indexes are given,
// or of every member.
func (c *procCluster) Endpoints(members ...int) []string {
	if len(members) == 0 {
		for i := range c.members {
			members = append(members, i)
		}
	}
	var eps []string
	for _, i := range members {
		eps = append(eps, c.members[i].client)
	}
	return eps
}

// Start starts member i's process (again, after Kill: same data, same
// ports).
func (c *procCluster) Start(i int) {
	c.t.Helper()
	p := c.members[i]
	p.mu.Lock()
	defer p.mu.Unlock()
	out, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatalf("etcd %s: log: %v", p.name, err)
	}
	cmd := exec.Command(c.bin, p.args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		c.t.Fatalf("etcd %s: start: %v", p.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited
}

// Kill kills member i with SIGKILL and waits for the process to exit.
func (c *procCluster) Kill(i int) {
	c.signal(i, syscall.SIGKILL)
	p := c.members[i]
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	<-exited
}

// Freeze stops member i with SIGSTOP: it keeps its connections open and
// answers nothing until Thaw.
func (c *procCluster) Freeze(i int) { c.signal(i, syscall.SIGSTOP) }

// Thaw resumes member i after Freeze.
func (c *procCluster) Thaw(i int) { c.signal(i, syscall.SIGCONT) }

func (c *procCluster) signal(i int, sig syscall.Signal) {
	c.t.Helper()
	p := c.members[i]
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		c.t.Fatalf("etcd %s: not started", p.name)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		c.t.Fatalf("etcd %s: %v: %v", p.name, sig, err)
	}
}

// stopAll kills every process and waits for it; on failure it logs the
// tail of each member's output.
func (c *procCluster) stopAll() {
	for _, p := range c.members {
		p.mu.Lock()
		cmd, exited := p.cmd, p.exited
		p.mu.Unlock()
		if cmd == nil {
			continue
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		if c.t.Failed() {
			if out, err := os.ReadFile(p.log); err == nil {
				c.t.Logf("etcd %s output (tail):\n%s", p.name, tail(string(out), 2000))
			}
		}
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// procClient returns a client of endpoints, closed at cleanup.
func procClient(t testing.TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// WaitServing waits until a linearizable read through endpoints succeeds,
// failing after startupLimit.
func (c *procCluster) WaitServing(endpoints ...string) {
	c.t.Helper()
	cli := procClient(c.t, endpoints...)
	deadline := time.Now().Add(startupLimit)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for ; ; <-tick.C {
		ctx, cancel := context.WithTimeout(c.t.Context(), 500*time.Millisecond)
		_, err := cli.Get(clientv3.WithRequireLeader(ctx), "health")
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("etcd cluster not serving within %v: %v", startupLimit, err)
		}
	}
}

// Leader returns the index of the member that leads, as the members
// report it, failing after startupLimit without one.
func (c *procCluster) Leader() int {
	c.t.Helper()
	cli := procClient(c.t, c.Endpoints()...)
	deadline := time.Now().Add(startupLimit)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for ; ; <-tick.C {
		for i, p := range c.members {
			ctx, cancel := context.WithTimeout(c.t.Context(), 500*time.Millisecond)
			st, err := cli.Status(ctx, p.client)
			cancel()
			if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
				return i
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no etcd member leads within %v", startupLimit)
		}
	}
}
