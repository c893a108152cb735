package reconcile

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// sharers are controllers over one store, each of its own prefix, that
// share one dependency; each reconcile fails, marked with dependency.Down,
// while the dependency's world is down, and records when it started.
type sharers struct {
	s     store.Store[*item]
	pg    *postgres
	ctrls []*Controller[*item]
	names []string

	mu      sync.Mutex
	started map[string][]time.Time // per key, when each reconcile started
}

func newSharers(t *testing.T, pg *postgres, deps []*dependency.Dependency, names ...string) *sharers {
	t.Helper()
	sh := &sharers{s: store.NewMemory[*item](), pg: pg, names: names, started: map[string][]time.Time{}}
	rec := ReconcilerFunc[*item](func(_ context.Context, req Request[*item]) (Result, error) {
		sh.mu.Lock()
		sh.started[req.Key] = append(sh.started[req.Key], time.Now())
		sh.mu.Unlock()
		if pg.down.Load() {
			return Result{}, dependency.Down("postgres", errRefused)
		}
		return Result{}, nil
	})
	for _, name := range names {
		c, err := New(sh.s, rec, Options[*item]{Name: name, Prefix: name + "/", Workers: 2, Dependencies: deps,
			RateLimiter: queue.NewExponential[string](100*time.Millisecond, time.Hour, 0)})
		require.NoError(t, err)
		sh.ctrls = append(sh.ctrls, c)
	}
	return sh
}

// downIn returns, per controller, whether its Health shows postgres down.
func (sh *sharers) downIn() []bool {
	out := make([]bool, len(sh.ctrls))
	for i, c := range sh.ctrls {
		out[i] = c.Health().Dependencies[0].Down
	}
	return out
}

// since returns when the reconciles of key that started at or after t
// started.
func (sh *sharers) since(key string, t time.Time) []time.Time {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var out []time.Time
	for _, at := range sh.started[key] {
		if !at.Before(t) {
			out = append(out, at)
		}
	}
	return out
}

// allSame reports whether every value of bs is b.
func allSame(bs []bool, b bool) bool {
	for _, x := range bs {
		if x != b {
			return false
		}
	}
	return true
}

// Controllers given one dependency share its check and its state: one
// check per Interval serves them all, whatever their number and when each
// started; the instant the check (or a reconcile of any of them) finds it
// down, every one reports it down in Health and Ready and hands out no
// key; the instant it is back, every one reconciles its held keys at once.
func TestControllersSharingADependencySeeItDownAndUpAtTheSameInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pg := &postgres{}
		var checks atomic.Int64
		check := func(ctx context.Context) error { checks.Add(1); return pg.check(ctx) }
		deps := []*dependency.Dependency{{Name: "postgres", Check: check, Interval: depInterval}}
		sh := newSharers(t, pg, deps, "roles", "databases", "backups")
		for i, c := range sh.ctrls { // started at different phases of the interval
			defer start(t, c)()
			if i < len(sh.ctrls)-1 {
				advance(depInterval / 3)
			}
		}
		synctest.Wait()
		before := checks.Load()
		advance(10 * depInterval)
		synctest.Wait()
		require.Equal(t, int64(10), checks.Load()-before, "not one check per interval for every controller")

		for _, blame := range []bool{false, true} {
			advance(depInterval / 2)
			if blame { // a reconcile of roles finds it down before the check does
				pg.down.Store(true)
				put(t, sh.s, "roles/app", &item{Want: 2})
				synctest.Wait()
				require.True(t, allSame(sh.downIn(), true), "blamed by roles, down in %v", sh.downIn())
			} else {
				pg.down.Store(true)
				for synctest.Wait(); allSame(sh.downIn(), false); synctest.Wait() {
					advance(depInterval / 10)
				}
				require.True(t, allSame(sh.downIn(), true), "down in %v at the same instant", sh.downIn())
			}
			down := time.Now()
			for i, c := range sh.ctrls {
				require.ErrorIs(t, c.Ready(), dependency.ErrDown, sh.names[i])
				put(t, sh.s, sh.names[i]+"/k", &item{Want: map[bool]int{false: 1, true: 2}[blame]})
			}
			advance(depInterval / 10)
			synctest.Wait()
			for _, name := range sh.names {
				require.Empty(t, sh.since(name+"/k", down), "%s handed out a key while its dependency was down", name)
			}

			advance(3 * depInterval)
			pg.down.Store(false)
			for synctest.Wait(); allSame(sh.downIn(), true); synctest.Wait() {
				advance(depInterval / 10)
			}
			require.True(t, allSame(sh.downIn(), false), "up in %v at the same instant", !blame)
			back := sh.ctrls[0].Health().Dependencies[0].Since // the instant of the check that succeeded
			if blame {
				require.Equal(t, []time.Time{down, back}, sh.since("roles/app", down), "the key that failed was not retried the instant it was back")
			}
			for i, name := range sh.names {
				require.NoError(t, sh.ctrls[i].Ready(), name)
				require.Equal(t, []time.Time{back}, sh.since(name+"/k", down), "%s did not retry its held key the instant it was back", name)
			}
		}
	})
}

// One dependency given to controllers that are not all running is checked
// while any of them runs, and stops being checked when the last stops.
func TestASharedDependencyIsCheckedWhileAnyOfItsControllersRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pg := &postgres{}
		var checks atomic.Int64
		check := func(ctx context.Context) error { checks.Add(1); return pg.check(ctx) }
		deps := []*dependency.Dependency{{Name: "postgres", Check: check, Interval: depInterval}}
		sh := newSharers(t, pg, deps, "roles", "databases")
		stopRoles := start(t, sh.ctrls[0])
		stopDatabases := start(t, sh.ctrls[1])
		synctest.Wait()
		stopRoles()
		before := checks.Load()
		advance(5 * depInterval)
		synctest.Wait()
		require.Equal(t, int64(5), checks.Load()-before, "the check stopped with the first controller")
		pg.down.Store(true)
		advance(dependency.DefaultFailureThreshold * depInterval)
		synctest.Wait()
		require.True(t, sh.ctrls[0].Health().Dependencies[0].Down, "a stopped controller sees the shared state")
		stopDatabases()
		before = checks.Load()
		advance(5 * depInterval)
		require.Equal(t, before, checks.Load(), "checked with no controller running")
		require.Equal(t, "[true true]", fmt.Sprint(sh.downIn()))
	})
}
