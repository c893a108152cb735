package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/internal/etcdflag/etcdtest"
	"github.com/converge-go/converge/internal/syncbuf"
)

// TestDemoOnAnExistingClusterOverMutualTLS runs the whole demo against an
// etcd server process it did not start, reached through -etcd and the TLS
// flags (a member that requires client certificates of its CA), with replica
// processes of this test binary, and checks what the narration claims:
// buckets spread when replicas join, a killed replica's buckets taken
// over once its TTL has passed, the paused replica's late write refused
// by its guard, and no key reconciled by two replicas at once nor written
// by a replica that did not own it.
func TestDemoOnAnExistingClusterOverMutualTLS(t *testing.T) {
	flags := etcdtest.External(t)
	exe, err := os.Executable()
	require.NoError(t, err)

	var out syncbuf.Buffer
	const ttl = time.Second
	cfg := Config{
		Etcd:       flags,
		Executable: exe, Out: &out,
		Keys: 200, Buckets: 64, Workers: 2, TTL: ttl, IO: 5 * time.Millisecond,
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute) // hang guard only
	defer cancel()
	rep, err := Run(ctx, cfg)
	defer func() {
		if t.Failed() {
			t.Logf("demo output:\n%s", out.String())
		}
	}()
	require.NoError(t, err)
	assert.Regexp(t, `result:\s+ok\n`, out.String())
	assert.Contains(t, out.String(), "(existing cluster)")

	assert.Len(t, rep.Throughput, 4)
	// Joining moves about a fair share: half the buckets to the second,
	// a third to the third.
	require.Len(t, rep.Moved, 2)
	assert.Equal(t, 32, rep.Moved[0])
	assert.InDelta(t, 22, rep.Moved[1], 1)
	assert.Positive(t, rep.Crashed)
	// The crashed replica's membership had to expire first: no takeover
	// before the TTL has passed since its last renewal (at most TTL/3
	// before the kill), and (on a loaded machine) within a few seconds.
	assert.GreaterOrEqual(t, rep.Takeover, ttl*2/3)
	assert.Less(t, rep.Takeover, ttl+5*time.Second)
	assert.GreaterOrEqual(t, rep.Frozen, ttl*2/3)
	assert.Equal(t, outGuard, rep.Late, "the paused replica's late write is refused by its guard")

	v := rep.Verdict
	assert.True(t, v.ok(), "%v", v)
	assert.Positive(t, v.Writes)
	assert.Positive(t, v.Refused)
}
