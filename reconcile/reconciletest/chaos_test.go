package reconciletest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
	"github.com/stretchr/testify/require"
)

var long = flag.Bool("long", false, "run the chaos test over many seeds (also CONVERGE_CHAOS_SEEDS=N)")

// chaosSeeds returns the seeds to run: a few in CI, more with -long or
// CONVERGE_CHAOS_SEEDS.
func chaosSeeds() []uint64 {
	n := 3
	if testing.Short() {
		n = 1
	}
	if *long {
		n = 50
	}
	if v, err := strconv.Atoi(os.Getenv("CONVERGE_CHAOS_SEEDS")); err == nil && v > 0 {
		n = v
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	return seeds
}

type rsSpec struct{ Replicas int }
type rsStatus struct{ Ready int }
type replicaSet = resource.Resource[rsSpec, rsStatus]

// scaler converges pods toward spec; Chaotic adds panics and hangs.
type scaler struct {
	world *World
}

func (r *scaler) Reconcile(ctx context.Context, req reconcile.Request[*replicaSet]) (reconcile.Result, error) {
	if req.Deleted {
		r.world.Scale(req.Key, 0)
		return reconcile.Result{}, nil
	}
	want := req.Object.Value.Spec.Replicas
	if r.world.Count(req.Key) != want {
		r.world.Scale(req.Key, want)
	}
	_, err := resource.WriteStatus(ctx, req.Store, req.Object, rsStatus{Ready: want})
	return reconcile.Result{}, err
}

// TestChaosConvergence runs a replica-set controller over 1,000 objects with
// 10% store errors, 5% injected conflicts, 1% panics, 1% hung calls ended by
// timeouts, watch breaks every few hundred events, spec changes, deletions
// and creations throughout, a loud and a silent store outage during which
// the world is disturbed, and a controller restart halfway. Every object must converge
// (status and world match spec), no desired state may be lost, no key may be
// reconciled by two workers at once, the idempotency check must pass, and no
// goroutine may be left (the bubble checks).
func TestChaosConvergence(t *testing.T) {
	for _, seed := range chaosSeeds() {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { runChaos(t, seed) })
		})
	}
}

func runChaos(t *testing.T, seed uint64) {
	const objects = 1000
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 7))
	env := NewEnv(t)
	mem := store.NewMemory[*replicaSet](store.WithHistory(500))
	s := Wrap(env, mem, faultstore.Options{Rand: rand.New(rand.NewPCG(seed, 0)),
		Rates: faultstore.Rates{Error: 0.10, Conflict: 0.05, MaxLatency: 2 * time.Millisecond, BreakWatchEvery: 300}})
	w := NewWorld(objects)

	// desired is the model: what the test wrote, which the store must keep.
	desired := map[string]int{}
	setSpec := func(key string, n int) {
		_, err := resource.PutSpec(ctx, mem, key, rsSpec{Replicas: n})
		require.NoError(t, err)
		desired[key] = n
	}
	deleteKey := func(key string) {
		obj, err := mem.Get(ctx, key)
		require.NoError(t, err)
		_, err = mem.Delete(ctx, key, obj.Revision)
		require.NoError(t, err)
		delete(desired, key)
	}
	for i := range objects {
		setSpec(fmt.Sprintf("rs-%04d", i), 1+rng.IntN(5))
	}

	newController := func(rngSeed uint64) (*reconcile.Controller[*replicaSet], *ExclusiveReconciler[*replicaSet]) {
		rec := Exclusive(t, Chaotic[*replicaSet](&scaler{world: w}, rngSeed, 0.01, 0.01))
		c, err := reconcile.New(s, rec, reconcile.Options[*replicaSet]{
			Name:        "replicasets",
			Workers:     8,
			Timeout:     time.Second,
			RateLimiter: queue.NewExponential[string](10*time.Millisecond, 2*time.Second, 0.2),
			Metrics:     env.Metrics(),
			Sources:     []reconcile.Source{w.Source()},
		})
		require.NoError(t, err)
		return c, rec
	}
	churn := func(n int) {
		keys := slices.Sorted(maps.Keys(desired))
		for range n {
			key := keys[rng.IntN(len(keys))]
			if _, ok := desired[key]; !ok {
				continue
			}
			switch rng.IntN(10) {
			case 0:
				deleteKey(key)
			case 1:
				setSpec(fmt.Sprintf("new-%d-%04d", seed, rng.IntN(100000)), 1+rng.IntN(5))
			default:
				setSpec(key, rng.IntN(6))
			}
			<-time.After(time.Duration(rng.IntN(3)) * time.Millisecond)
		}
	}

	c1, rec1 := newController(seed)
	env.Start(c1)
	churn(300)
	counts := env.Converge(5 * time.Second)
	require.Positive(t, counts.Reconciles)

	// An outage: the world is disturbed and reports it; the controller
	// heals from its cache while the store is gone.
	s.SetOutage(faultstore.Loud)
	disturbed := slices.Sorted(maps.Keys(desired))[:50]
	for _, key := range disturbed {
		w.Disturb(key)
	}
	<-time.After(3 * time.Second)
	for _, key := range disturbed {
		if desired[key] > 0 {
			require.Equal(t, desired[key], w.Count(key), "%s was not healed during the outage", key)
		}
	}
	require.NotEmpty(t, c1.Health().Degraded)
	churn(100) // desired state changes the controller cannot see yet
	s.SetOutage(faultstore.Up)
	churn(100)

	// A silent outage: calls fail while the watch stays open, delivers
	// nothing and answers no progress request (as an etcd member cut off
	// from its peers): the controller must notice it all the same, and
	// heal from its cache.
	s.SetOutage(faultstore.Silent)
	disturbed = slices.Sorted(maps.Keys(desired))[50:100]
	for _, key := range disturbed {
		w.Disturb(key)
	}
	churn(50) // held back by the watch until the outage ends
	<-time.After(3 * time.Second)
	require.NotEmpty(t, c1.Health().Degraded, "a silent outage was not reported")
	for _, key := range disturbed {
		if obj, ok := c1.Lister().Get(key); ok && obj.Value.Spec.Replicas > 0 {
			require.Equal(t, obj.Value.Spec.Replicas, w.Count(key), "%s was not healed from the cache during the silent outage", key)
		}
	}
	s.SetOutage(faultstore.Up)
	churn(50)

	// A restart halfway: a new controller with a fresh cache over the same
	// store.
	env.Stop(c1)
	c2, rec2 := newController(seed + 1000)
	env.Start(c2)
	churn(300)
	rev, err := mem.Revision(ctx)
	require.NoError(t, err)
	if rng.IntN(2) == 0 {
		require.NoError(t, s.Compact(ctx, rev)) // old resume points are gone too
		s.BreakWatches()
	}
	env.Converge(10 * time.Second)

	// Every object converged; no desired state lost or invented.
	objs, _, err := mem.List(ctx, "")
	require.NoError(t, err)
	require.Len(t, objs, len(desired))
	for _, obj := range objs {
		rs := obj.Value
		want, ok := desired[obj.Key]
		require.True(t, ok, "object %s was invented", obj.Key)
		require.Equal(t, want, rs.Spec.Replicas, "the desired state of %s was lost", obj.Key)
		require.Equal(t, want, rs.Status.Ready, "status of %s", obj.Key)
		require.Equal(t, rs.Generation, rs.ObservedGeneration, "observed generation of %s", obj.Key)
		require.Equal(t, want, w.Count(obj.Key), "pods of %s", obj.Key)
	}
	for key, n := range w.Snapshot() {
		_, ok := desired[key]
		require.True(t, ok || n == 0, "pods of deleted %s still run", key)
	}
	require.Zero(t, rec1.Violations()+rec2.Violations())
	env.CheckIdempotent(10*time.Second, func() any { return w.Snapshot() })

	final := env.counts()
	require.Positive(t, final.Panics, "no panic was injected")
	require.Positive(t, final.Conflicts, "no conflict was injected")
	require.Positive(t, final.Errors)
	t.Logf("seed %d: %d reconciles, %d errors, %d panics, %d conflicts, %d writes",
		seed, final.Reconciles, final.Errors, final.Panics, final.Conflicts, final.Writes)
	if t.Failed() {
		t.Log(errors.New("chaos run failed; rerun with this seed to reproduce"))
	}
}
