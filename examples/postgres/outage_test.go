package main

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/internal/procs"
	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
)

// reconcileLog records the reconciles an operator made.
type reconcileLog struct {
	mu  sync.Mutex
	all []reconcileRecord
}

type reconcileRecord struct {
	controller, key string
	started         time.Time
	err             error
}

func (l *reconcileLog) observe(controller, key string, started time.Time, err error) {
	l.mu.Lock()
	l.all = append(l.all, reconcileRecord{controller, key, started, err})
	l.mu.Unlock()
}

// startedBetween counts, per controller and key, the reconciles of the
// controllers that act on PostgreSQL started in [from, to).
func (l *reconcileLog) startedBetween(from, to time.Time) map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for _, r := range l.all {
		if r.controller != "backupschedules" && !r.started.Before(from) && r.started.Before(to) {
			out[r.controller+" "+r.key]++
		}
	}
	return out
}

// outageLength is how long PostgreSQL is stopped (POSTGRES_OUTAGE, a Go
// duration, for longer runs).
func outageLength(t *testing.T) time.Duration {
	d := 10 * time.Second
	if s := os.Getenv("POSTGRES_OUTAGE"); s != "" {
		var err error
		d, err = time.ParseDuration(s)
		require.NoError(t, err, "POSTGRES_OUTAGE")
	}
	return d
}

// PostgreSQL stopped for a while: the operator does not crash and stays
// healthy; /readyz and the debug page name PostgreSQL as down within the
// documented bound (4 × the check interval, plus the probes' own time);
// while it is down no key is reconciled against it beyond the one
// reconcile that found it down (the circuit holds them), though specs keep
// changing; once it is back, everything converges, the changes made
// meanwhile included.
func TestAPostgreSQLOutageHoldsTheKeysAndEverythingConvergesAfterIt(t *testing.T) {
	e := newPGEnv(t)
	var log reconcileLog
	cfg := e.daemonConfig()
	cfg.Observe = log.observe
	op := e.startInProcess(cfg)
	for i := range 3 {
		put(t, e.stores.Roles, fmt.Sprintf("roles/r%d", i), RoleSpec{ConnectionLimit: intp(1)})
		put(t, e.stores.Databases, fmt.Sprintf("databases/d%d", i), DatabaseSpec{Reclaim: Delete})
	}
	externaltest.WaitConverged(t, e.stores.Roles, convergeLimit, "roles/r0", "roles/r1", "roles/r2")
	externaltest.WaitConverged(t, e.stores.Databases, convergeLimit, "databases/d0", "databases/d1", "databases/d2")

	stopped := time.Now()
	require.NoError(t, e.pg.Stop())
	bound := 4*cfg.CheckInterval + 10*time.Second // documented bound, and room for the probes
	waitFor(t, "/readyz naming postgres as down", bound, func() bool {
		code, body := procs.Get(t.Context(), op.base+"/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "dependency: down: "+DependencyName)
	})
	// The controllers share PostgreSQL's check and state: once /readyz
	// names it down, the debug page shows it down for every one of them.
	_, page := procs.Get(t.Context(), op.base+DebugPath+"?format=json")
	for _, c := range []string{"roles", "databases", "backups"} {
		require.Equal(t, "down", dependencyState(page, c), "postgres down for one controller, not yet for %s", c)
	}
	require.LessOrEqual(t, time.Since(stopped), bound)
	down := time.Now()
	require.Equal(t, http.StatusOK, procs.Probe(t.Context(), op.base+"/healthz"), "a dependency down is not a reason to restart the operator")

	// Specs keep changing while PostgreSQL is down: each change wakes a
	// key the circuit must hold.
	n := 0
	for time.Since(stopped) < outageLength(t) {
		n++
		put(t, e.stores.Roles, fmt.Sprintf("roles/r%d", n%3), RoleSpec{ConnectionLimit: intp(n)})
		select {
		case <-time.After(200 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}
	back := time.Now()
	for key, count := range log.startedBetween(down, back) {
		require.LessOrEqual(t, count, 1, "%s was reconciled %d times while PostgreSQL was known down", key, count)
	}
	for key, count := range log.startedBetween(stopped, back) {
		require.LessOrEqual(t, count, 3, "%s was reconciled %d times during the outage", key, count)
	}
	require.NoError(t, e.pg.Start(t.Context()))
	returned := time.Now()
	e.waitReady(op.base)
	externaltest.WaitConverged(t, e.stores.Roles, convergeLimit, "roles/r0", "roles/r1", "roles/r2")
	for i := range 3 {
		waitFor(t, fmt.Sprintf("r%d's limit written during the outage", i), convergeLimit, func() bool {
			return e.query("postgres", fmt.Sprintf("SELECT rolconnlimit FROM pg_roles WHERE rolname = 'r%d'", i)) == fmt.Sprint(lastLimit(n, i))
		})
	}
	require.Equal(t, "3", e.query("postgres", "SELECT count(*) FROM pg_database WHERE datname IN ('d0', 'd1', 'd2')"))
	// The figure the issue asks for (within 1 s of PostgreSQL's return) is
	// logged, not asserted: a loaded machine may take longer, and only the
	// bound above is a guarantee.
	t.Logf("converged %v after PostgreSQL was back (check interval %v)", time.Since(returned).Round(time.Millisecond), cfg.CheckInterval)
	require.NotErrorIs(t, op.op.Roles.Ready(), dependency.ErrDown)
}

// lastLimit is the last connection limit the outage loop wrote to role
// r<i> after n writes (the nth wrote n to r<n%3>), or 1 if it wrote none.
func lastLimit(n, i int) int {
	for k := n; k >= 1; k-- {
		if k%3 == i {
			return k
		}
	}
	return 1
}
