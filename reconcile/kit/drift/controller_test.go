package drift_test

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/drift"
	"github.com/converge-go/converge/store"
)

// role is a desired role; the world holds its attributes.
type role struct{ Attrs string }

// roleOperator converges the fake world toward the store's roles and
// counts its reconciles per key; given its drift source, it tells it what
// each reconcile left.
type roleOperator struct {
	world *world
	drift *drift.Source // nil: it does not tell
	mu    sync.Mutex
	runs  map[string]int
}

func (o *roleOperator) Reconcile(_ context.Context, req reconcile.Request[*role]) (reconcile.Result, error) {
	o.mu.Lock()
	o.runs[req.Key]++
	o.mu.Unlock()
	if req.Deleted {
		o.world.remove(req.Key) // not desired: drop it
		o.drift.Reconciled(req.Key)
		return reconcile.Result{}, nil
	}
	if fp, ok := o.world.get(req.Key); !ok || fp != req.Object.Value.Attrs {
		o.world.set(req.Key, req.Object.Value.Attrs)
	}
	o.drift.Reconciled(req.Key, req.Object.Value.Attrs)
	return reconcile.Result{}, nil
}

// takeRuns returns the reconciles per key since the last call.
func (o *roleOperator) takeRuns() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.runs
	o.runs = map[string]int{}
	return out
}

const interval = 30 * time.Second

// startRoles runs a controller of alice and bob over a memory store, with
// a drift source polling w every interval, that the reconciler tells
// what it made if report.
func startRoles(t *testing.T, w *world, log *slog.Logger, report bool) (*reconcile.Controller[*role], *roleOperator, func()) {
	c, _, op, stop := startRolesIn(t, w, log, report)
	return c, op, stop
}

// startRolesIn is startRoles, returning the store too.
func startRolesIn(t *testing.T, w *world, log *slog.Logger, report bool) (*reconcile.Controller[*role], store.Store[*role], *roleOperator, func()) {
	s := store.NewMemory[*role]()
	for _, name := range []string{"roles/alice", "roles/bob"} {
		_, err := s.Create(context.Background(), name, &role{Attrs: "login"})
		require.NoError(t, err)
	}
	src := newSource(t, w.list, drift.Options{Name: "postgres roles", Interval: interval})
	op := &roleOperator{world: w, runs: map[string]int{}}
	if report {
		op.drift = src
	}
	c, err := reconcile.New(s, op, reconcile.Options[*role]{Name: "roles", Prefix: "roles/", Sources: []reconcile.Source{src}, Logger: log})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	require.NoError(t, c.WaitForSync(ctx))
	advance(interval) // a poll after the creations: the baseline holds them
	synctest.Wait()
	op.takeRuns()
	return c, s, op, func() {
		cancel()
		require.NoError(t, <-done)
	}
}

func want(attrs ...string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(attrs); i += 2 {
		out[attrs[i]] = attrs[i+1]
	}
	return out
}

func (w *world) snapshot() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.objs)
}

// A role altered by hand, one dropped and one created behind the
// controller's back are healed at the next poll, within one interval, by
// reconciles of those keys alone.
func TestDriftBehindTheControllersBackIsHealedWithinOneInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(nil)
		_, op, stop := startRoles(t, w, nil, false)
		require.Equal(t, want("roles/alice", "login", "roles/bob", "login"), w.snapshot())
		w.set("roles/alice", "login,superuser")
		w.remove("roles/bob")
		w.set("roles/mallory", "superuser")
		advance(interval)
		synctest.Wait()
		require.Equal(t, want("roles/alice", "login", "roles/bob", "login"), w.snapshot())
		require.Equal(t, map[string]int{"roles/alice": 1, "roles/bob": 1, "roles/mallory": 1}, op.takeRuns())
		advance(interval) // the heals' own echo: one reconcile each, finding nothing to do
		synctest.Wait()
		advance(3 * interval)
		synctest.Wait()
		require.Equal(t, map[string]int{"roles/alice": 1, "roles/bob": 1, "roles/mallory": 1}, op.takeRuns())
		stop()
	})
}

func TestKeysWokenByDriftShowTheSourcesNameInTheirTriggers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(nil)
		c, _, stop := startRoles(t, w, nil, false)
		w.set("roles/alice", "superuser")
		advance(interval)
		synctest.Wait()
		for _, k := range c.Snapshot() {
			if k.Key == "roles/alice" {
				require.Equal(t, []string{"source postgres roles"}, k.LastTriggers)
			}
		}
		stop()
	})
}

// A poll that fails is returned to the controller, which logs it and
// starts the source again after its backoff, and shows it in
// Health.Degraded under the source's name (not making the controller
// unready) until a poll succeeds; drift found before or during the outage
// is healed when the world answers again.
func TestAFailingPollIsLoggedRetriedByTheControllerAndLosesNoDrift(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(nil)
		var logs syncbuf.Buffer
		c, op, stop := startRoles(t, w, slog.New(slog.NewTextHandler(&logs, nil)), false)
		require.Empty(t, c.Health().Degraded)
		w.fail(errors.New("connection refused"))
		w.set("roles/alice", "superuser")
		advance(2 * interval)
		synctest.Wait()
		require.Contains(t, logs.String(), "source failed; restarting")
		require.Contains(t, logs.String(), `drift source \"postgres roles\": list: connection refused`)
		require.Empty(t, op.takeRuns(), "no poll, no wake-up")
		require.Equal(t, "superuser", w.snapshot()["roles/alice"])
		require.Equal(t, []string{`source "postgres roles": connection refused`}, c.Health().Degraded)
		require.NoError(t, c.Ready(), "a failing drift source does not make the controller unready")
		w.fail(nil)
		advance(interval)
		synctest.Wait()
		require.Empty(t, c.Health().Degraded, "the source's error stays after a successful poll")
		require.Equal(t, want("roles/alice", "login", "roles/bob", "login"), w.snapshot())
		require.Equal(t, map[string]int{"roles/alice": 1}, op.takeRuns())
		stop()
	})
}

// Through a controller: a role the reconciler made
// and someone dropped before the next poll is made again by the reconcile
// that poll wakes; and the reconciler's own heals, reported, wake nothing
// more.
func TestARoleMadeAndDroppedWithinOnePollIntervalIsMadeAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(nil)
		_, s, op, stop := startRolesIn(t, w, nil, true)
		_, err := s.Create(context.Background(), "roles/carol", &role{Attrs: "login"})
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, want("roles/alice", "login", "roles/bob", "login", "roles/carol", "login"), w.snapshot())
		w.remove("roles/carol") // by hand, before the next poll
		advance(interval)
		synctest.Wait()
		require.Equal(t, want("roles/alice", "login", "roles/bob", "login", "roles/carol", "login"), w.snapshot())
		require.Equal(t, map[string]int{"roles/carol": 2}, op.takeRuns(), "made, then made again")
		advance(3 * interval)
		synctest.Wait()
		require.Empty(t, op.takeRuns(), "the heal, reported, wakes nothing more")
		stop()
	})
}
