package robustness_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/reconciletest"
	"github.com/converge-go/converge/store/faultstore"
	"github.com/stretchr/testify/require"
)

// chaosSeedsEnv asks for more seeds of the chaos tests, here as in
// reconcile/reconciletest.
const chaosSeedsEnv = "CONVERGE_CHAOS_SEEDS"

// patience bounds every wait of the chaos and soak tests: a safety net
// against hanging, not an assertion about speed.
const patience = time.Minute

// chaosSeeds returns the seeds to run on each backend: 2 (1 with -short),
// or CONVERGE_CHAOS_SEEDS.
func chaosSeeds() []uint64 {
	n := 2
	if testing.Short() {
		n = 1
	}
	if v, err := strconv.Atoi(os.Getenv(chaosSeedsEnv)); err == nil && v > 0 {
		n = v
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	return seeds
}

// waitFor polls cond until it holds, failing t after patience.
func waitFor(t *testing.T, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(patience)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: "+format, append([]any{patience}, args...)...)
		}
		<-tick.C
	}
}

// lazy formats as what its function returns when formatted, for failure
// messages that describe the last check.
type lazy func() string

func (l lazy) String() string { return l() }

// TestChaosConvergesOnEveryBackend runs a replica-set controller over the
// memory store, bolt and an embedded etcd member, through a fault store
// (10% errors, 5% conflicts, latency, watch breaks every few hundred
// events), with a reconciler that panics and hangs now and then. Two other
// programs write the store directly meanwhile: a user changing one spec at
// a time and a foreign writer changing several keys per transaction (one
// etcd transaction, all keys at one revision, on etcd). During the run the
// store goes through a silent outage (calls fail or hang, the watch stays
// open, delivers nothing and answers no progress request) while the world
// is disturbed, a loud one, broken watches and a compaction.
//
// Once the faults stop: WaitForRevision(store revision) returns only after
// every key's last write was reconciled at that revision or later; every
// key's world and status equal its last desired state, and no desired
// state was lost; both outages were reported in Health and the world was
// healed from the cache during the silent one; no key was reconciled by
// two workers at once; nothing is left running (TestMain).
func TestChaosConvergesOnEveryBackend(t *testing.T) {
	for _, b := range chaosBackends() {
		seeds := chaosSeeds()
		if b.oneSeed && os.Getenv(chaosSeedsEnv) == "" {
			seeds = seeds[:1]
		}
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("%s/seed=%d", b.name, seed), func(t *testing.T) { runChaos(t, b, seed) })
		}
	}
}

func runChaos(t *testing.T, b chaosBackend, seed uint64) {
	const objects = 200
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(seed, 7))
	inner, foreign := b.open(t, 10_000)
	faulty, err := faultstore.New[*replicaSet](inner, faultstore.Options{
		Rand:  rand.New(rand.NewPCG(seed, 0)),
		Rates: faultstore.Rates{Error: 0.10, Conflict: 0.05, MaxLatency: time.Millisecond, BreakWatchEvery: 300},
	})
	require.NoError(t, err)
	w := reconciletest.NewWorld(1024)
	desired := newLedger()
	key := func(i int) string { return fmt.Sprintf("rs-%04d", i) }
	for i := range objects {
		wr, err := writeSpec(ctx, inner, key(i), 1+rng.IntN(5))
		require.NoError(t, err)
		desired.record(key(i), wr)
	}

	rec := newChaosReconciler(faulty, w, seed)
	rec.notes = desired
	exclusive := reconciletest.Exclusive(t, reconcile.Reconciler[*replicaSet](rec))
	c, err := reconcile.New[*replicaSet](faulty, exclusive, reconcile.Options[*replicaSet]{
		Name:              "replicasets",
		Workers:           8,
		Timeout:           200 * time.Millisecond,
		RateLimiter:       queue.NewExponential[string](5*time.Millisecond, 200*time.Millisecond, 0.2),
		HeartbeatInterval: b.heartbeat,
		GracePeriod:       time.Second,
		Sources:           []reconcile.Source{w.Source()},
	})
	require.NoError(t, err)
	runCtx, stopRun := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- c.Run(runCtx) }()
	defer func() {
		stopRun()
		require.NoError(t, <-runDone)
	}()
	syncCtx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	require.NoError(t, c.WaitForSync(syncCtx))

	// Two other programs write the store directly, all along. Stopping
	// them lets their last writes finish (and be recorded).
	writeCtx, stopWriters := context.WithCancel(ctx)
	defer stopWriters()
	var writers sync.WaitGroup
	var pause sync.RWMutex // held for writing, the writers wait
	var ops, multi atomic.Int64
	keySpace := objects + objects/4 // some keys come and go
	writer := func(seed uint64, most int, apply func([]change) (int, error)) {
		r := rand.New(rand.NewPCG(seed, 13))
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-writeCtx.Done():
				return
			case <-tick.C:
			}
			picked := map[string]bool{}
			var changes []change
			for range 1 + r.IntN(most) {
				k := key(r.IntN(keySpace))
				if picked[k] {
					continue
				}
				picked[k] = true
				changes = append(changes, change{key: k, replicas: r.IntN(6), delete: r.IntN(10) == 0})
			}
			pause.RLock()
			n, err := apply(changes)
			pause.RUnlock()
			if err != nil {
				t.Errorf("writer: %v", err)
				return
			}
			ops.Add(int64(n))
			if n > 1 {
				multi.Add(1)
			}
		}
	}
	user := sequentialWriter{inner}
	writers.Go(func() {
		writer(seed+100, 1, func(ch []change) (int, error) { return user.apply(ctx, ch, desired) })
	})
	writers.Go(func() {
		writer(seed+200, 5, func(ch []change) (int, error) { return foreign.apply(ctx, ch, desired) })
	})
	opsGrow := func(n int64, during string) {
		t.Helper()
		from := ops.Load()
		waitFor(t, func() bool { return ops.Load() >= from+n }, "the writers made no %d writes during %s", n, during)
	}
	degraded := func() bool { return len(c.Health().Degraded) > 0 }

	waitFor(t, func() bool {
		n := 0
		for i := range objects {
			if rec.seenRev(key(i)) > 0 {
				n++
			}
		}
		return n >= objects/2
	}, "the controller reconciled too few keys before the faults")

	// A silent outage: the controller must notice, and keep healing the
	// world from its cache while the writers go on.
	outage := faultstore.Silent
	if seed%2 == 0 {
		outage = faultstore.SilentHang
	}
	faulty.SetOutage(outage)
	waitFor(t, degraded, "a %s outage was never reported in Health", outage)
	lister := c.Lister()
	var disturbed []string
	for i := range objects {
		if obj, ok := lister.Get(key(i)); ok && obj.Value.Spec.Replicas > 0 && w.Count(key(i)) > 0 && len(disturbed) < 20 {
			disturbed = append(disturbed, key(i))
			w.Disturb(key(i))
		}
	}
	require.NotEmpty(t, disturbed)
	waitFor(t, func() bool {
		for _, k := range disturbed {
			obj, ok := lister.Get(k)
			if !ok || w.Count(k) != obj.Value.Spec.Replicas {
				return false
			}
		}
		return true
	}, "the world was not healed from the cache during a %s outage", outage)
	opsGrow(50, "the silent outage")
	require.NotEmpty(t, c.Health().Degraded, "Health recovered during a %s outage", outage)
	faulty.SetOutage(faultstore.Up)
	waitFor(t, func() bool { return !degraded() }, "Health stayed degraded after the %s outage: %v", outage, lazy(func() string { return fmt.Sprint(c.Health().Degraded) }))

	// A loud outage: calls fail and the watch ends.
	faulty.SetOutage(faultstore.Loud)
	waitFor(t, degraded, "a loud outage was never reported in Health")
	opsGrow(20, "the loud outage")
	faulty.SetOutage(faultstore.Up)
	waitFor(t, func() bool { return !degraded() }, "Health stayed degraded after the loud outage: %v", lazy(func() string { return fmt.Sprint(c.Health().Degraded) }))

	// Broken watches, then a compaction that takes every resume point.
	for range 3 {
		faulty.BreakWatches()
		opsGrow(10, "broken watches")
	}
	// The writers pause meanwhile, until the cache is known to reflect the
	// compaction point (by a re-list, or by events): every change after it
	// then reaches the controller, while what came and went before it may
	// be lost to the controller for good, as it would be in production.
	pause.Lock()
	compacted, err := inner.Revision(ctx)
	require.NoError(t, err)
	require.NoError(t, inner.Compact(ctx, compacted))
	faulty.BreakWatches()
	waitFor(t, func() bool { return c.Health().Revision >= compacted }, "the cache never caught up with the compaction at %d", compacted)
	pause.Unlock()
	opsGrow(20, "the compaction")

	waitExercised(t, b, inner, &multi)

	// The faults stop; the system must converge.
	stopWriters()
	writers.Wait()
	require.NoError(t, faulty.SetRates(faultstore.Rates{}))
	rev, err := inner.Revision(ctx)
	require.NoError(t, err)
	waitCtx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	require.NoError(t, c.WaitForRevision(waitCtx, rev), "WaitForRevision(%d)", rev)
	final := desired.snapshot()
	for k, wr := range final {
		seen := rec.seenRev(k)
		if wr.deleted && wr.rev <= compacted {
			// Its last incarnation may have come and gone in the history
			// the compaction took from the controller, leaving no trace in
			// a re-list (the world check below still applies to it).
			continue
		}
		require.GreaterOrEqual(t, seen, wr.rev,
			"WaitForRevision(%d) returned before %s was reconciled at its last write (revision %d, deleted %v); the store was compacted at %d; its history:\n%s",
			rev, k, wr.rev, wr.deleted, compacted, strings.Join(desired.history(k), "\n"))
	}
	checkConverged(t, inner, w, desired)
	require.Zero(t, exclusive.Violations())
	require.Zero(t, rec.staleReads(), "reconciles were given objects older than their controller's own status writes")
	t.Logf("%s seed %d: %d writes by other programs (%d multi-key), %d keys", b.name, seed, ops.Load(), multi.Load(), len(final))
}

// waitExercised waits, while the writers go on, until the run has
// exercised what comes only as they progress: the store's own faults
// (ownFaults: the process cluster's kills) and, on etcd, a transaction
// that wrote several keys (multi counts them; the controller's status
// writes make them conflict now and then).
func waitExercised(t *testing.T, b chaosBackend, s chaosStore, multi *atomic.Int64) {
	t.Helper()
	if own, ok := s.(ownFaults); ok {
		waitInjected(t, own)
	}
	if b.name == "etcd" {
		waitFor(t, func() bool { return multi.Load() > 0 }, "no transaction wrote several keys")
	}
}

// ownFaults is a chaos store that injects faults of its own as the
// test's writers progress (the process cluster's kills and restarts):
// Injected is closed once it has injected them all, or given up.
type ownFaults interface {
	Injected() <-chan struct{}
}

// waitInjected waits until s has injected its own faults, failing t if
// that takes longer than ownFaultsPatience.
func waitInjected(t *testing.T, s ownFaults) {
	t.Helper()
	timer := time.NewTimer(ownFaultsPatience)
	defer timer.Stop()
	select {
	case <-s.Injected():
	case <-timer.C:
		t.Fatalf("the store's own faults were not all injected within %v", ownFaultsPatience)
	}
}

// ownFaultsPatience bounds waitInjected: four steps of process faults,
// each bounded by procPatience.
const ownFaultsPatience = 4 * procPatience

// checkConverged waits until every key's status and world equal its last
// desired state, and no world state outlives its key; the store must hold
// exactly the desired state the writers recorded.
func checkConverged(t *testing.T, s chaosStore, w *reconciletest.World, l *ledger) {
	t.Helper()
	ctx := t.Context()
	want := l.snapshot()
	objs, _, err := s.List(ctx, "")
	require.NoError(t, err)
	live := map[string]bool{}
	for _, obj := range objs {
		live[obj.Key] = true
		wr, ok := want[obj.Key]
		require.True(t, ok && !wr.deleted, "%s exists but its last write deleted it (or was never made)", obj.Key)
		require.Equal(t, wr.replicas, obj.Value.Spec.Replicas, "the desired state of %s was lost (now %+v at %d); its history:\n%s",
			obj.Key, *obj.Value, obj.Revision, strings.Join(l.history(obj.Key), "\n"))
	}
	for k, wr := range want {
		require.Equal(t, !wr.deleted, live[k], "%s: its last write (deleted %v) is not what the store holds", k, wr.deleted)
	}
	var why string
	converged := func() bool {
		objs, _, err := s.List(ctx, "")
		require.NoError(t, err)
		for _, obj := range objs {
			rs := obj.Value
			switch n := rs.Spec.Replicas; {
			case rs.Status.Ready != n || rs.ObservedGeneration != rs.Generation:
				why = fmt.Sprintf("status of %s: %+v", obj.Key, *rs)
				return false
			case w.Count(obj.Key) != n:
				why = fmt.Sprintf("%s runs %d pods, wants %d", obj.Key, w.Count(obj.Key), n)
				return false
			}
		}
		for k, n := range w.Snapshot() {
			if !live[k] && n != 0 {
				why = fmt.Sprintf("deleted %s still runs %d pods", k, n)
				return false
			}
		}
		return true
	}
	waitFor(t, converged, "not converged: %v", lazy(func() string { return why }))
}
