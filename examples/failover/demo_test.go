package main

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/internal/syncbuf"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
)

// TestDemo runs the whole demo in process, with this test binary as the
// pods' executable, and checks its guarantees from the report: one leader
// at a time, a takeover within the TTL (plus a margin for a loaded machine)
// of a crash that did not release the lease, convergence before and after,
// the late write fenced off by etcd, and nothing left behind (goleak checks the
// goroutines in TestMain).
func TestDemo(t *testing.T) {
	const ttl = time.Second
	exe, err := os.Executable()
	require.NoError(t, err)
	var out syncbuf.Buffer
	cfg := Config{
		TTL:        ttl,
		Executable: exe,
		Out:        &out,
		Logger:     slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelError})),
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // hang guard only
	defer cancel()
	rep, err := Run(ctx, cfg)
	defer func() {
		if t.Failed() {
			t.Logf("demo output:\n%s", out.String())
		}
	}()
	require.NoError(t, err)
	demo.AssertNoProcessLeft(t, rep.StartedPIDs)
	assert.Empty(t, rep.Leftover)
	assert.Regexp(t, `result:\s+ok\n`, out.String())

	// One leader at a time, every term over by the end, tokens growing.
	require.GreaterOrEqual(t, len(rep.Terms), 2)
	if a, b, found := overlap(rep.Terms); found {
		t.Errorf("terms overlap: %+v and %+v", a, b)
	}
	for i, term := range rep.Terms {
		assert.False(t, term.End.IsZero(), "term %d (%s) never ended", i, term.Replica)
		if i > 0 {
			assert.Greater(t, term.Token, rep.Terms[i-1].Token, "fencing tokens grow")
		}
	}

	// Converged before the crash, after the takeover (by adopting the
	// pods, not replacing them) and after the scale-up.
	names := make([]string, len(rep.Phases))
	for i, p := range rep.Phases {
		names[i] = p.Name
		assert.Len(t, p.Pods, p.Want, p.Name)
		assert.Equal(t, p.Generation, p.ObservedGeneration, p.Name)
	}
	require.Equal(t, []string{"converge", "takeover", "scale up"}, names)
	before, takeover, scaled := rep.Phases[0], rep.Phases[1], rep.Phases[2]
	assert.Equal(t, 3, before.Want)
	assert.Equal(t, int64(1), before.Generation)
	assert.Equal(t, before.Pods, takeover.Pods, "the new leader adopts the running pods")
	assert.Zero(t, takeover.Started)
	assert.Equal(t, 5, scaled.Want)
	assert.Equal(t, int64(2), scaled.Generation)

	// The leader crashed without releasing; another took over within the
	// TTL, give or take a margin for a loaded machine.
	c := rep.Crash
	assert.Equal(t, before.Leader, c.Old.Replica, "the crashed replica led")
	assert.NotEqual(t, c.Old.Replica, c.New.Replica)
	assert.True(t, c.RecordKept, "the crash left the lease record in place")
	assert.Greater(t, c.Handover, time.Duration(0))
	const margin = 2 * time.Second
	assert.LessOrEqual(t, c.Handover, ttl+margin, "handover")
	assert.Equal(t, c.New.Replica, takeover.Leader)
	assert.Equal(t, c.New.Replica, scaled.Leader)

	// The write the leader sent under its term, delivered after the
	// takeover, was fenced off: by the guard alone, since its
	// compare-and-swap revision was still the replica set's.
	l := rep.LateWrite
	assert.Equal(t, c.Old.Token, l.Term.Token)
	assert.True(t, l.SameRevision, "the replica set changed between the late write's sending and its delivery")
	assert.ErrorIs(t, l.Err, store.ErrGuardFailed)
	assert.True(t, l.Unchanged)
	assert.LessOrEqual(t, rep.GoroutinesAfter, rep.GoroutinesBefore)
}
