package robustness_test

import (
	"context"
	"errors"
	"fmt"
	"net"
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
// requires, whose members a test kills (SIGKILL) and restarts. Adapted
// from store/etcdstore/procs_test.go (a test-only file of another module):
// the same process handling, with errors returned instead of t.Fatal so
// that a fault-injecting goroutine can use it.

// procPatience bounds the waits on the process cluster (start-up, an
// election, a restart): a safety net against hanging, not an assertion
// about speed.
const procPatience = 30 * time.Second

// buildEtcdServer builds the etcd server this module requires into a
// temporary directory of t (go's build cache makes later builds a link).
func buildEtcdServer(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "etcd")
	out, err := exec.Command("go", "build", "-o", path, "go.etcd.io/etcd/server/v3").CombinedOutput()
	if err != nil {
		t.Fatalf("go build go.etcd.io/etcd/server/v3: %v\n%s", err, out)
	}
	return path
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
// temporary directory, and waits until it serves a linearizable read.
// Every process is killed at cleanup, and its output logged if t failed.
func startProcCluster(t testing.TB, n int) *procCluster {
	t.Helper()
	c := &procCluster{t: t, bin: buildEtcdServer(t)}
	var initial []string
	addrs := make([]string, 2*n)
	for i := range addrs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs[i] = l.Addr().String()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		initial = append(initial, fmt.Sprintf("p%d=http://%s", i, addrs[2*i+1]))
	}
	dir := t.TempDir()
	for i := range n {
		name := fmt.Sprintf("p%d", i)
		client, peer := "http://"+addrs[2*i], "http://"+addrs[2*i+1]
		c.members = append(c.members, &proc{
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
		})
	}
	t.Cleanup(c.stopAll)
	for i := range c.members {
		if err := c.Start(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WaitServing(t.Context(), c.Endpoints()...); err != nil {
		t.Fatal(err)
	}
	return c
}

// Endpoints returns the client URLs of the members whose indexes are
// given, or of every member.
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
func (c *procCluster) Start(i int) error {
	p := c.members[i]
	p.mu.Lock()
	defer p.mu.Unlock()
	out, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("etcd %s: log: %w", p.name, err)
	}
	cmd := exec.Command(c.bin, p.args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return fmt.Errorf("etcd %s: start: %w", p.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited
	return nil
}

// Kill kills member i with SIGKILL and waits for the process to exit.
func (c *procCluster) Kill(i int) error {
	p := c.members[i]
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("etcd %s: not started", p.name)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("etcd %s: kill: %w", p.name, err)
	}
	<-exited
	return nil
}

// stopAll kills every process and waits for it; if the test failed it
// logs the tail of each member's output.
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
				s := string(out)
				s = s[max(0, len(s)-2000):]
				c.t.Logf("etcd %s output (tail):\n%s", p.name, s)
			}
		}
	}
}

// client returns a new client of endpoints; the caller closes it.
func (c *procCluster) client(endpoints ...string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	return cli, nil
}

// readable reports whether a linearizable read through endpoints succeeds
// within timeout.
func (c *procCluster) readable(ctx context.Context, timeout time.Duration, endpoints ...string) (bool, error) {
	cli, err := c.client(endpoints...)
	if err != nil {
		return false, err
	}
	defer cli.Close()
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err = cli.Get(clientv3.WithRequireLeader(rctx), "health")
	return err == nil, nil
}

// WaitServing waits until a linearizable read through endpoints succeeds,
// failing after procPatience.
func (c *procCluster) WaitServing(ctx context.Context, endpoints ...string) error {
	cli, err := c.client(endpoints...)
	if err != nil {
		return err
	}
	defer cli.Close()
	deadline := time.Now().Add(procPatience)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, err := cli.Get(clientv3.WithRequireLeader(rctx), "health")
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("etcd %v not serving within %v: %w", endpoints, procPatience, err)
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// Leader returns the index of the member that leads, as the members
// report it, failing after procPatience without one.
func (c *procCluster) Leader(ctx context.Context) (int, error) {
	cli, err := c.client(c.Endpoints()...)
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	deadline := time.Now().Add(procPatience)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		for i, p := range c.members {
			sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			st, err := cli.Status(sctx, p.client)
			cancel()
			if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
				return i, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, errors.New("no etcd member leads")
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}
