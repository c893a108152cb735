package controller_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/reconcile/reconciletest"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/faultstore"
)

// horizon is how far ahead reconciletest.Env.Converge looks for due work.
const horizon = time.Minute

// env is the controller running in a reconciletest.Env over an in-memory
// store wrapped with faults, acting on a world of pretend pods.
type env struct {
	*reconciletest.Env
	t      *testing.T
	ctx    context.Context
	mem    *store.Memory[*controller.ReplicaSet]
	faulty *faultstore.Store[*controller.ReplicaSet]
	pods   *fakePods
}

// startEnv starts the controller inside the current synctest bubble, with
// the given store faults, and waits for its cache to sync.
func startEnv(t *testing.T, faults faultstore.Options) *env {
	e := &env{Env: reconciletest.NewEnv(t), t: t, ctx: context.Background(), pods: newFakePods()}
	e.mem = store.NewMemory[*controller.ReplicaSet](store.WithMutationCheck(nil))
	e.faulty = reconciletest.Wrap(e.Env, e.mem, faults)
	c, err := controller.New(e.faulty, controller.Config{Pods: e.pods, Exits: e.pods.exits, Metrics: e.Metrics()})
	require.NoError(t, err)
	e.Start(c)
	return e
}

// putSpec writes a spec behind the faults' back, as the operator would.
func (e *env) putSpec(spec controller.Spec) {
	_, err := resource.PutSpec(e.ctx, e.mem, "web", spec)
	require.NoError(e.t, err)
}

// scale writes a spec of n replicas and lets the controller work until it
// is idle; it returns what happened meanwhile.
func (e *env) scale(n int) reconciletest.Counts {
	e.putSpec(controller.Spec{Replicas: n})
	return e.Converge(horizon)
}

// assertStarts checks how many pods were ever started and stopped.
func (e *env) assertStarts(starts, stops int) {
	e.t.Helper()
	gotStarts, gotStops := e.pods.counts()
	assert.Equal(e.t, starts, gotStarts, "pods started")
	assert.Equal(e.t, stops, gotStops, "pods stopped")
}

// assertStill checks that the controller is idle once converged
// (reconciletest's CheckIdle): nothing is reconciled or written while
// nothing changes, and reconciling every key again changes nothing, no
// store write, no pod started or stopped.
func (e *env) assertStill() {
	e.t.Helper()
	e.CheckIdle(horizon, e.pods.snapshot)
}

func (e *env) get() *controller.ReplicaSet {
	obj, err := e.mem.Get(e.ctx, "web")
	require.NoError(e.t, err)
	return obj.Value
}

// assertConverged checks that want pods run and that the stored status
// records exactly them, Ready, for the latest generation.
func (e *env) assertConverged(want int) {
	e.t.Helper()
	pids := e.pods.pids("web")
	assert.Len(e.t, pids, want)
	rs := e.get()
	assert.Equal(e.t, want, rs.Status.ReadyReplicas)
	assert.Equal(e.t, pids, rs.Status.Pods)
	assert.Equal(e.t, rs.Generation, rs.ObservedGeneration)
	ready, ok := resource.FindCondition(rs.Conditions, controller.ConditionReady)
	require.True(e.t, ok)
	assert.Equal(e.t, resource.ConditionTrue, ready.Status)
}

func TestControllerConvergesAndAConvergedReplicaSetStaysStill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := startEnv(t, faultstore.Options{})
		e.scale(3)
		e.assertConverged(3)
		e.assertStarts(3, 0)
		e.assertStill()
	})
}

// A pod that dies wakes its replica set through the exits channel (a
// source of the controller), and only the dead pod is replaced.
func TestControllerReplacesADeadPodWhenItsExitWakesTheReplicaSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := startEnv(t, faultstore.Options{})
		e.scale(3)
		dead := e.pods.Running("web")[1]
		e.pods.kill(dead)

		e.Converge(horizon)
		e.assertConverged(3)
		assert.NotContains(t, e.get().Status.Pods, dead.PID)
		e.assertStarts(4, 0)
		e.assertStill()
	})
}

func TestControllerScalesDownNewestFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := startEnv(t, faultstore.Options{})
		e.scale(4)
		oldest := e.pods.pids("web")[:2]

		e.scale(2)
		e.assertConverged(2)
		assert.Equal(t, oldest, e.pods.pids("web"))
		assert.Equal(t, int64(2), e.get().ObservedGeneration)
		e.assertStarts(4, 2)
		e.assertStill()
	})
}

// Through a store that fails a fifth of the calls, refuses a fifth of the
// writes with conflicts and breaks its watches, every spec change still
// converges, and once the faults stop a converged replica set stays still.
func TestControllerConvergesThroughStoreFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := startEnv(t, faultstore.Options{
			Rand:  rand.New(rand.NewPCG(7, 0)),
			Rates: faultstore.Rates{Error: 0.2, Conflict: 0.2, BreakWatchEvery: 3},
		})
		var failed int64
		for _, n := range []int{3, 5, 1, 4} {
			failed += e.scale(n).Errors
			e.assertConverged(n)
		}
		assert.Positive(t, failed, "no reconcile met an injected fault")
		require.NoError(t, e.faulty.SetRates(faultstore.Rates{}))
		e.assertStill()
	})
}

func TestControllerStopsEveryPodOfADeletedReplicaSetAndWritesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := startEnv(t, faultstore.Options{})
		e.scale(2)
		last, err := e.mem.Get(e.ctx, "web")
		require.NoError(t, err)
		_, err = e.mem.Delete(e.ctx, "web", last.Revision)
		require.NoError(t, err)

		counts := e.Converge(horizon)
		assert.Empty(t, e.pods.pids("web"))
		assert.Zero(t, counts.Writes, "nothing written for a deleted replica set")
	})
}

// Over a store with the API-server layer, a replica set deleted while no
// controller runs stays, marked, with its pods running; the next
// controller (a fresh one, as a restarted process: nothing cached) stops
// them, and only then is the replica set gone.
func TestAReplicaSetDeletedWhileNoControllerRunsHasItsPodsStoppedByTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, rt, pods := context.Background(), reconciletest.NewEnv(t), newFakePods()
		mem := store.NewMemory[*controller.ReplicaSet](store.WithMutationCheck(nil))
		layered, err := apistore.New(mem, resource.Kind[controller.Spec, controller.Status]{})
		require.NoError(t, err)
		start := func() *reconcile.Controller[*controller.ReplicaSet] {
			c, err := controller.New(layered, controller.Config{Pods: pods, Exits: pods.exits, Metrics: rt.Metrics()})
			require.NoError(t, err)
			rt.Start(c)
			return c
		}
		first := start()
		_, err = resource.PutSpec(ctx, layered, "web", controller.Spec{Replicas: 2})
		require.NoError(t, err)
		rt.Converge(horizon)
		obj, err := layered.Get(ctx, "web")
		require.NoError(t, err)
		require.True(t, obj.Value.HasFinalizer(controller.Finalizer), "pods started for a replica set without the finalizer")
		require.Len(t, pods.pids("web"), 2)
		rt.Stop(first)

		_, marked, err := layered.DeleteWith(ctx, "web", obj.Revision, apistore.Background)
		require.NoError(t, err)
		require.True(t, marked, "deleted at once: nothing would stop its pods")
		require.Len(t, pods.pids("web"), 2)

		start()
		rt.Converge(horizon)
		_, err = layered.Get(ctx, "web")
		require.ErrorIs(t, err, store.ErrNotFound)
		assert.Empty(t, pods.pids("web"), "the pods of the deleted replica set leaked")
		starts, stops := pods.counts()
		assert.Equal(t, 2, starts, "pods started")
		assert.Equal(t, 2, stops, "pods stopped")
	})
}

// An invalid spec is a terminal error: reconciled once, not retried, and
// no pod is started for it.
func TestControllerDoesNotRetryAnInvalidSpec(t *testing.T) {
	for name, spec := range map[string]controller.Spec{
		"negative replicas": {Replicas: -1},
		"unknown command":   {Replicas: 1, Command: []string{"converge-no-such-command"}},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := startEnv(t, faultstore.Options{})
				e.putSpec(spec)
				counts := e.Converge(horizon)
				assert.Equal(t, int64(1), counts.Reconciles)
				assert.Equal(t, int64(1), counts.Errors)
				e.assertStarts(0, 0)
			})
		})
	}
}

// fixture calls the reconciler directly with requests a controller would
// not make on its own: a stale object, a store that refuses writes.
type fixture struct {
	t    *testing.T
	ctx  context.Context
	s    *store.Memory[*controller.ReplicaSet]
	pods *fakePods
	rec  *controller.Reconciler
}

func newFixture(t *testing.T) *fixture {
	pods := newFakePods()
	return &fixture{t: t, ctx: t.Context(), s: store.NewMemory[*controller.ReplicaSet](store.WithMutationCheck(nil)),
		pods: pods, rec: &controller.Reconciler{Pods: pods}}
}

func (f *fixture) putSpec(spec controller.Spec) {
	_, err := resource.PutSpec(f.ctx, f.s, "web", spec)
	require.NoError(f.t, err)
}

func (f *fixture) get() store.Object[*controller.ReplicaSet] {
	obj, err := f.s.Get(f.ctx, "web")
	require.NoError(f.t, err)
	return obj
}

// reconcile reconciles obj with the fixture's store as the request's.
func (f *fixture) reconcile(obj store.Object[*controller.ReplicaSet]) error {
	_, err := f.rec.Reconcile(f.ctx, reconcile.Request[*controller.ReplicaSet]{Key: "web", Object: obj, Store: f.s})
	return err
}

func (f *fixture) revision() int64 {
	rev, err := f.s.Revision(f.ctx)
	require.NoError(f.t, err)
	return rev
}

// A status write against a revision that is no longer current is refused
// with a conflict, which the controller answers by reconciling the newer
// object; nothing is overwritten.
func TestReconcileOfAStaleObjectConflictsAndWritesNothing(t *testing.T) {
	f := newFixture(t)
	f.putSpec(controller.Spec{Replicas: 1})
	stale := f.get()
	f.putSpec(controller.Spec{Replicas: 2})

	require.ErrorIs(t, f.reconcile(stale), store.ErrConflict)
	rs := f.get().Value
	assert.Equal(t, 2, rs.Spec.Replicas)
	assert.Zero(t, rs.ObservedGeneration, "stale status must not be written")

	require.NoError(t, f.reconcile(f.get()))
	assert.Len(t, f.pods.pids("web"), 2)
}

// A start that fails leaves an honest status (the pods that did start,
// Ready=False) and an error that is retried with backoff, not as a conflict.
func TestReconcileRecordsAFailedStartAndRetriesIt(t *testing.T) {
	f := newFixture(t)
	f.pods.setFailFrom(3)
	f.putSpec(controller.Spec{Replicas: 3})
	err := f.reconcile(f.get())
	require.Error(t, err)
	assert.NotErrorIs(t, err, store.ErrConflict)
	assert.NotErrorIs(t, err, reconcile.ErrTerminal)

	rs := f.get().Value
	assert.Equal(t, 2, rs.Status.ReadyReplicas)
	ready, _ := resource.FindCondition(rs.Conditions, controller.ConditionReady)
	assert.Equal(t, resource.ConditionFalse, ready.Status)
	assert.Equal(t, "StartFailed", ready.Reason)

	f.pods.setFailFrom(0)
	require.NoError(t, f.reconcile(f.get()))
	rs = f.get().Value
	assert.Equal(t, 3, rs.Status.ReadyReplicas)
	ready, _ = resource.FindCondition(rs.Conditions, controller.ConditionReady)
	assert.Equal(t, resource.ConditionTrue, ready.Status)
}

// The reconciler writes only through the request's store: given one that
// refuses every write (fenced by a term that is over, as a deposed
// leader's controller would hand over), it leaves the replica set as it
// was and reports the guard failure.
func TestReconcileWritesOnlyThroughTheRequestStore(t *testing.T) {
	f := newFixture(t)
	f.putSpec(controller.Spec{Replicas: 2})
	rev := f.revision()
	lease, err := lock.NewLease(store.NewMemory[lock.Record](), "leases/rs", lock.LeaseOptions{Holder: "a", TTL: time.Hour})
	require.NoError(t, err)
	term, err := lease.Acquire(f.ctx)
	require.NoError(t, err)
	require.NoError(t, term.Release(f.ctx))
	deposed, err := lock.Fenced[*controller.ReplicaSet](f.s, term)
	require.NoError(t, err)

	_, err = f.rec.Reconcile(f.ctx, reconcile.Request[*controller.ReplicaSet]{Key: "web", Object: f.get(), Store: deposed})
	require.ErrorIs(t, err, store.ErrGuardFailed)
	assert.Equal(t, rev, f.revision(), "a refused status write reached the store")
	assert.Zero(t, f.get().Value.ObservedGeneration)
}

// StatusWritten hears each status write that changed the stored object,
// and nothing from a reconcile that wrote nothing.
func TestStatusWrittenHearsEachWriteAndNoIdleReconcile(t *testing.T) {
	f := newFixture(t)
	var heard []int64
	f.rec.StatusWritten = func(_ context.Context, obj store.Object[*controller.ReplicaSet]) {
		heard = append(heard, obj.Revision)
	}
	f.putSpec(controller.Spec{Replicas: 2})
	require.NoError(t, f.reconcile(f.get()))
	require.Equal(t, []int64{f.revision()}, heard)
	require.NoError(t, f.reconcile(f.get()))
	assert.Len(t, heard, 1, "an idle reconcile reported a write")
}
