// Package etcdprocs runs etcd as users run it, for tests: a cluster of
// separate etcd server processes on loopback, whose members a test kills
// (SIGKILL), freezes (SIGSTOP: a member that keeps its connections open and
// answers nothing, as a paused VM or a partition would), thaws and restarts.
//
// The server binary is built with `go build go.etcd.io/etcd/server/v3` in
// the current directory, so the calling test's module must require that
// module. Nothing here calls testing: every method returns an error, so
// that a fault-injecting goroutine can use it; callers wrap it for their
// tests.
package etcdprocs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Build builds the etcd server required by the current module into dir and
// returns its path. Go's build cache makes a second build a link.
func Build(dir string) (string, error) {
	path := filepath.Join(dir, "etcd")
	out, err := exec.Command("go", "build", "-o", path, "go.etcd.io/etcd/server/v3").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build go.etcd.io/etcd/server/v3: %w\n%s", err, out)
	}
	return path, nil
}

// member is one etcd member running as a process.
type member struct {
	name   string
	client string // client URL
	args   []string
	log    string // file receiving the process's output

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when the running process has exited
}

// Cluster is a cluster of etcd processes on loopback. Its methods are safe
// for concurrent use.
type Cluster struct {
	bin     string
	members []*member
}

// Start starts an n-member cluster of the server binary bin with fast raft
// timings (10 ms heartbeats, 100 ms election timeout), member data and logs
// under dir, and waits up to patience until it serves a linearizable read.
// The caller calls Stop.
func Start(ctx context.Context, bin, dir string, n int, patience time.Duration) (*Cluster, error) {
	addrs, err := FreeAddrs(2 * n)
	if err != nil {
		return nil, err
	}
	var initial []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("p%d=http://%s", i, addrs[2*i+1]))
	}
	c := &Cluster{bin: bin}
	for i := range n {
		name := fmt.Sprintf("p%d", i)
		client, peer := "http://"+addrs[2*i], "http://"+addrs[2*i+1]
		c.members = append(c.members, &member{
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
	for i := range c.members {
		if err := c.Start(i); err != nil {
			c.Stop()
			return nil, err
		}
	}
	if err := c.WaitServing(ctx, patience, c.Endpoints()...); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// Size returns the number of members.
func (c *Cluster) Size() int { return len(c.members) }

// Endpoints returns the client URLs of the members whose indexes are
// given, or of every member.
func (c *Cluster) Endpoints(members ...int) []string {
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
func (c *Cluster) Start(i int) error {
	m := c.members[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	out, err := os.OpenFile(m.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("etcd %s: log: %w", m.name, err)
	}
	cmd := exec.Command(c.bin, m.args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return fmt.Errorf("etcd %s: start: %w", m.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(exited)
	}()
	m.cmd, m.exited = cmd, exited
	return nil
}

// Kill kills member i with SIGKILL and waits for the process to exit.
func (c *Cluster) Kill(i int) error {
	if err := c.signal(i, syscall.SIGKILL); err != nil {
		return err
	}
	m := c.members[i]
	m.mu.Lock()
	exited := m.exited
	m.mu.Unlock()
	<-exited
	return nil
}

// Freeze stops member i with SIGSTOP: it keeps its connections open and
// answers nothing until Thaw.
func (c *Cluster) Freeze(i int) error { return c.signal(i, syscall.SIGSTOP) }

// Thaw resumes member i after Freeze.
func (c *Cluster) Thaw(i int) error { return c.signal(i, syscall.SIGCONT) }

func (c *Cluster) signal(i int, sig syscall.Signal) error {
	m := c.members[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return fmt.Errorf("etcd %s: not started", m.name)
	}
	if err := m.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("etcd %s: %v: %w", m.name, sig, err)
	}
	return nil
}

// Stop kills every process and waits for it.
func (c *Cluster) Stop() {
	for _, m := range c.members {
		m.mu.Lock()
		cmd, exited := m.cmd, m.exited
		m.mu.Unlock()
		if cmd == nil {
			continue
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
}

// Logs returns the last n bytes of each member's output, by member name,
// for a failing test to print.
func (c *Cluster) Logs(n int) map[string]string {
	logs := map[string]string{}
	for _, m := range c.members {
		if out, err := os.ReadFile(m.log); err == nil {
			logs[m.name] = string(out[max(0, len(out)-n):])
		}
	}
	return logs
}

// Client returns a new client of endpoints, logging nothing; the caller
// closes it.
func Client(endpoints ...string) (*clientv3.Client, error) {
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

// Readable reports whether a linearizable read through endpoints succeeds
// within timeout.
func (c *Cluster) Readable(ctx context.Context, timeout time.Duration, endpoints ...string) (bool, error) {
	cli, err := Client(endpoints...)
	if err != nil {
		return false, err
	}
	defer cli.Close()
	return read(ctx, cli, timeout) == nil, nil
}

func read(ctx context.Context, cli *clientv3.Client, timeout time.Duration) error {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := cli.Get(clientv3.WithRequireLeader(rctx), "health")
	return err
}

// WaitServing waits until a linearizable read through endpoints succeeds,
// failing after patience or when ctx ends.
func (c *Cluster) WaitServing(ctx context.Context, patience time.Duration, endpoints ...string) error {
	cli, err := Client(endpoints...)
	if err != nil {
		return err
	}
	defer cli.Close()
	return poll(ctx, patience, func() error { return read(ctx, cli, 500*time.Millisecond) },
		fmt.Sprintf("etcd %v not serving", endpoints))
}

// Leader returns the index of the member that leads, as the members report
// it, failing after patience without one or when ctx ends.
func (c *Cluster) Leader(ctx context.Context, patience time.Duration) (int, error) {
	cli, err := Client(c.Endpoints()...)
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	leader := -1
	err = poll(ctx, patience, func() error {
		for i, m := range c.members {
			sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			st, err := cli.Status(sctx, m.client)
			cancel()
			if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
				leader = i
				return nil
			}
		}
		return errors.New("no member leads")
	}, "etcd cluster without a leader")
	return leader, err
}

// poll calls try every 20 ms until it succeeds, patience passes or ctx ends.
func poll(ctx context.Context, patience time.Duration, try func() error, what string) error {
	deadline := time.Now().Add(patience)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := try()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s within %v: %w", what, patience, err)
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}
