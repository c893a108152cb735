package robustness_test

import (
	"testing"
	"time"

	"github.com/converge-go/converge/store/etcdstore/etcdprocs"
)

// procPatience bounds the waits on the process cluster (start-up, an
// election, a restart): a safety net against hanging, not an assertion
// about speed.
const procPatience = 30 * time.Second

// startProcCluster builds the etcd server this module requires (a link,
// with a warm build cache) and starts an n-member cluster of its processes
// on loopback (etcdprocs), stopped at cleanup with each member's output
// logged if the test failed.
func startProcCluster(t testing.TB, n int) *etcdprocs.Cluster {
	t.Helper()
	bin, err := etcdprocs.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := etcdprocs.Start(t.Context(), bin, t.TempDir(), n, procPatience)
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
	return c
}
