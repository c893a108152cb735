package main

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/converge-go/converge/examples/internal/etcdflag"
	"github.com/converge-go/converge/examples/internal/etcdflag/etcdtest"
	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/store"
)

// TestDemoOnAnExistingClusterOverMutualTLS runs the demo against an etcd
// server process it did not start, named by -etcd and reached with the TLS flags
// (the member requires client certificates of its CA): the failover and
// the fencing of the late write work there as on the embedded member, and
// the demo leaves none of its keys behind in the cluster.
func TestDemoOnAnExistingClusterOverMutualTLS(t *testing.T) {
	flags := etcdtest.External(t)
	exe, err := os.Executable()
	require.NoError(t, err)

	var out syncbuf.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // hang guard only
	defer cancel()
	rep, err := Run(ctx, Config{
		Etcd: flags, TTL: time.Second, Executable: exe, Out: &out,
		Logger: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	defer func() {
		if t.Failed() {
			t.Logf("demo output:\n%s", out.String())
		}
	}()
	require.NoError(t, err)
	assert.Contains(t, out.String(), "(an existing cluster)")
	assert.Regexp(t, `result:\s+ok\n`, out.String())
	assert.NotEqual(t, rep.Crash.Old.Replica, rep.Crash.New.Replica)
	assert.ErrorIs(t, rep.LateWrite.Err, store.ErrGuardFailed)

	e, err := etcdflag.Open(flags, t.TempDir())
	require.NoError(t, err)
	defer e.Close()
	cli, err := e.Client()
	require.NoError(t, err)
	defer cli.Close()
	left, err := cli.Get(ctx, etcdPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	assert.Zero(t, left.Count, "keys left under %s", etcdPrefix)
}
