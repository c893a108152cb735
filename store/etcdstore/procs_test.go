package etcdstore_test

import (
	"os"
	"sync"
	"testing"

	"github.com/converge-go/converge/store/etcdstore/etcdprocs"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// This file wraps etcdprocs (a cluster of etcd server processes on
// loopback) for these tests: failures stop the test.

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
		etcdBin.dir, etcdBin.err = os.MkdirTemp("", "etcdstore-etcd-")
		if etcdBin.err == nil {
			etcdBin.path, etcdBin.err = etcdprocs.Build(etcdBin.dir)
		}
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

// procCluster is an etcdprocs.Cluster whose failures stop the test.
type procCluster struct {
	t testing.TB
	*etcdprocs.Cluster
}

// startProcCluster starts an n-member process cluster, stopped at cleanup
// (with each member's output logged if the test failed). Tests that use it
// are skipped with -short.
func startProcCluster(t testing.TB, n int) *procCluster {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a cluster of etcd processes")
	}
	c, err := etcdprocs.Start(t.Context(), etcdBinary(t), t.TempDir(), n, startupLimit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			for name, out := range c.Logs(2000) {
				t.Logf("etcd %s output (tail):\n%s", name, out)
			}
		}
	})
	return &procCluster{t: t, Cluster: c}
}

func (c *procCluster) check(err error) {
	c.t.Helper()
	if err != nil {
		c.t.Fatal(err)
	}
}

// Start restarts member i (same data, same ports).
func (c *procCluster) Start(i int) { c.t.Helper(); c.check(c.Cluster.Start(i)) }

// Kill kills member i with SIGKILL and waits for it to exit.
func (c *procCluster) Kill(i int) { c.t.Helper(); c.check(c.Cluster.Kill(i)) }

// Freeze stops member i with SIGSTOP until Thaw.
func (c *procCluster) Freeze(i int) { c.t.Helper(); c.check(c.Cluster.Freeze(i)) }

// Thaw resumes member i after Freeze.
func (c *procCluster) Thaw(i int) { c.t.Helper(); c.check(c.Cluster.Thaw(i)) }

// WaitServing waits until a linearizable read through endpoints succeeds.
func (c *procCluster) WaitServing(endpoints ...string) {
	c.t.Helper()
	c.check(c.Cluster.WaitServing(c.t.Context(), startupLimit, endpoints...))
}

// Leader returns the index of the member that leads.
func (c *procCluster) Leader() int {
	c.t.Helper()
	i, err := c.Cluster.Leader(c.t.Context(), startupLimit)
	c.check(err)
	return i
}

// procClient returns a client of endpoints, closed at cleanup.
func procClient(t testing.TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := etcdprocs.Client(endpoints...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}
