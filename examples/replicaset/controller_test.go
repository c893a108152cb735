package main

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/resource"
	"github.com/converge-go/converge/store"
)

// fakePods is a world of pretend processes that counts what is done to it.
type fakePods struct {
	pods     []Pod
	nextPID  int
	starts   int
	stops    int
	failFrom int // if positive, the failFrom-th start and later ones fail
}

func (f *fakePods) Running(owner string) []Pod {
	var out []Pod
	for _, p := range f.pods {
		if p.Owner == owner {
			out = append(out, p)
		}
	}
	return out
}

func (f *fakePods) Start(_ context.Context, owner string, _ []string) (Pod, error) {
	if f.failFrom > 0 && f.starts+1 >= f.failFrom {
		return Pod{}, errors.New("fork: resource temporarily unavailable")
	}
	f.starts++
	f.nextPID++
	p := Pod{Owner: owner, PID: 1000 + f.nextPID, Started: time.Unix(int64(f.nextPID), 0)}
	f.pods = append(f.pods, p)
	return p, nil
}

func (f *fakePods) Stop(_ context.Context, pod Pod) error {
	f.stops++
	f.kill(pod.PID)
	return nil
}

// kill removes a pod as if it had died.
func (f *fakePods) kill(pid int) {
	f.pods = slices.DeleteFunc(f.pods, func(p Pod) bool { return p.PID == pid })
}

func (f *fakePods) pids(owner string) []int {
	var out []int
	for _, p := range f.Running(owner) {
		out = append(out, p.PID)
	}
	return out
}

type fixture struct {
	t    *testing.T
	ctx  context.Context
	s    *store.Memory[*ReplicaSet]
	pods *fakePods
	rec  *Reconciler
}

func newFixture(t *testing.T) *fixture {
	s := store.NewMemory[*ReplicaSet](store.WithMutationCheck(nil))
	pods := &fakePods{}
	return &fixture{t: t, ctx: t.Context(), s: s, pods: pods, rec: &Reconciler{Pods: pods}}
}

func (f *fixture) putSpec(spec Spec) {
	_, err := resource.PutSpec(f.ctx, f.s, "web", spec)
	require.NoError(f.t, err)
}

func (f *fixture) get() store.Object[*ReplicaSet] {
	obj, err := f.s.Get(f.ctx, "web")
	require.NoError(f.t, err)
	return obj
}

// reconcile reconciles the stored object, as the controller would with
// an up-to-date cache; the request's store is the fixture's (a controller
// hands over its own, which writes through it).
func (f *fixture) reconcile() error {
	_, err := f.rec.Reconcile(f.ctx, reconcile.Request[*ReplicaSet]{Key: "web", Object: f.get(), Store: f.s})
	return err
}

func (f *fixture) revision() int64 {
	rev, err := f.s.Revision(f.ctx)
	require.NoError(f.t, err)
	return rev
}

// assertIdle checks that a reconcile with nothing changed starts, stops
// and writes nothing.
func (f *fixture) assertIdle() {
	f.t.Helper()
	starts, stops, rev := f.pods.starts, f.pods.stops, f.revision()
	require.NoError(f.t, f.reconcile())
	assert.Equal(f.t, starts, f.pods.starts, "pods started by an idle reconcile")
	assert.Equal(f.t, stops, f.pods.stops, "pods stopped by an idle reconcile")
	assert.Equal(f.t, rev, f.revision(), "store written by an idle reconcile")
}

func TestReconcileConvergesAndIsIdempotent(t *testing.T) {
	f := newFixture(t)
	f.putSpec(Spec{Replicas: 3})
	require.NoError(t, f.reconcile())
	assert.Equal(t, 3, f.pods.starts)

	rs := f.get().Value
	assert.Equal(t, 3, rs.Status.ReadyReplicas)
	assert.Equal(t, f.pods.pids("web"), rs.Status.Pods)
	assert.Equal(t, rs.Generation, rs.ObservedGeneration)
	ready, ok := resource.FindCondition(rs.Conditions, ConditionReady)
	require.True(t, ok)
	assert.Equal(t, resource.ConditionTrue, ready.Status)

	f.assertIdle()
	f.assertIdle()
}

func TestReconcileReplacesDeadPods(t *testing.T) {
	f := newFixture(t)
	f.putSpec(Spec{Replicas: 3})
	require.NoError(t, f.reconcile())
	dead := f.pods.pods[1].PID
	f.pods.kill(dead)

	require.NoError(t, f.reconcile())
	assert.Equal(t, 4, f.pods.starts)
	assert.Zero(t, f.pods.stops)
	status := f.get().Value.Status
	assert.Equal(t, 3, status.ReadyReplicas)
	assert.NotContains(t, status.Pods, dead)
	assert.Equal(t, f.pods.pids("web"), status.Pods)
	f.assertIdle()
}

func TestReconcileScalesDownNewestFirst(t *testing.T) {
	f := newFixture(t)
	f.putSpec(Spec{Replicas: 4})
	require.NoError(t, f.reconcile())
	oldest := f.pods.pids("web")[:2]

	f.putSpec(Spec{Replicas: 2})
	require.NoError(t, f.reconcile())
	assert.Equal(t, 2, f.pods.stops)
	assert.Equal(t, oldest, f.pods.pids("web"))
	rs := f.get().Value
	assert.Equal(t, int64(2), rs.ObservedGeneration)
	assert.Equal(t, oldest, rs.Status.Pods)
	f.assertIdle()
}

// A status write against a revision that is no longer current is refused
// with a conflict, which the controller answers by reconciling the newer
// object; nothing is overwritten.
func TestReconcileStaleObjectConflicts(t *testing.T) {
	f := newFixture(t)
	f.putSpec(Spec{Replicas: 1})
	stale := f.get()
	f.putSpec(Spec{Replicas: 2})

	_, err := f.rec.Reconcile(f.ctx, reconcile.Request[*ReplicaSet]{Key: "web", Object: stale, Store: f.s})
	require.ErrorIs(t, err, store.ErrConflict)
	rs := f.get().Value
	assert.Equal(t, 2, rs.Spec.Replicas)
	assert.Zero(t, rs.ObservedGeneration, "stale status must not be written")

	require.NoError(t, f.reconcile())
	assert.Len(t, f.pods.pids("web"), 2)
	f.assertIdle()
}

func TestReconcileDeletedStopsEveryPod(t *testing.T) {
	f := newFixture(t)
	f.putSpec(Spec{Replicas: 2})
	require.NoError(t, f.reconcile())
	last := f.get()
	_, err := f.s.Delete(f.ctx, "web", last.Revision)
	require.NoError(t, err)
	rev := f.revision()

	_, err = f.rec.Reconcile(f.ctx, reconcile.Request[*ReplicaSet]{Key: "web", Object: last, Deleted: true, Store: f.s})
	require.NoError(t, err)
	assert.Empty(t, f.pods.pids("web"))
	assert.Equal(t, rev, f.revision(), "nothing written for a deleted replica set")
}

func TestReconcileInvalidSpecIsTerminal(t *testing.T) {
	for name, spec := range map[string]Spec{
		"negative replicas": {Replicas: -1},
		"unknown command":   {Replicas: 1, Command: []string{"converge-no-such-command"}},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.putSpec(spec)
			err := f.reconcile()
			require.ErrorIs(t, err, reconcile.ErrTerminal)
			assert.Zero(t, f.pods.starts)
		})
	}
}

// A start that fails leaves an honest status (the pods that did start,
// Ready=False) and an error that is retried with backoff, not as a conflict.
func TestReconcileStartFailure(t *testing.T) {
	f := newFixture(t)
	f.pods.failFrom = 3
	f.putSpec(Spec{Replicas: 3})
	err := f.reconcile()
	require.Error(t, err)
	assert.NotErrorIs(t, err, store.ErrConflict)
	assert.NotErrorIs(t, err, reconcile.ErrTerminal)

	rs := f.get().Value
	assert.Equal(t, 2, rs.Status.ReadyReplicas)
	ready, _ := resource.FindCondition(rs.Conditions, ConditionReady)
	assert.Equal(t, resource.ConditionFalse, ready.Status)
	assert.Equal(t, "StartFailed", ready.Reason)

	f.pods.failFrom = 0
	require.NoError(t, f.reconcile())
	rs = f.get().Value
	assert.Equal(t, 3, rs.Status.ReadyReplicas)
	ready, _ = resource.FindCondition(rs.Conditions, ConditionReady)
	assert.Equal(t, resource.ConditionTrue, ready.Status)
	f.assertIdle()
}

// The reconciler writes only through the request's store: given one that
// refuses every write (fenced by a term that is over, as a deposed
// leader's controller would hand over), it leaves the replica set as it
// was and reports the guard failure.
func TestReconcileWritesOnlyThroughTheRequestStore(t *testing.T) {
	f := newFixture(t)
	f.putSpec(Spec{Replicas: 2})
	rev := f.revision()
	lease, err := lock.NewLease(store.NewMemory[lock.Record](), "leases/rs", lock.LeaseOptions{Holder: "a", TTL: time.Hour})
	require.NoError(t, err)
	term, err := lease.Acquire(f.ctx)
	require.NoError(t, err)
	require.NoError(t, term.Release(f.ctx))
	deposed, err := lock.Fenced[*ReplicaSet](f.s, term)
	require.NoError(t, err)

	_, err = f.rec.Reconcile(f.ctx, reconcile.Request[*ReplicaSet]{Key: "web", Object: f.get(), Store: deposed})
	require.ErrorIs(t, err, store.ErrGuardFailed)
	assert.Equal(t, rev, f.revision(), "a refused status write reached the store")
	assert.Zero(t, f.get().Value.ObservedGeneration)
}

// StatusWritten hears each status write that changed the stored object,
// and nothing from a reconcile that wrote nothing.
func TestStatusWrittenHearsEachWrite(t *testing.T) {
	f := newFixture(t)
	var heard []int64
	f.rec.StatusWritten = func(_ context.Context, obj store.Object[*ReplicaSet]) { heard = append(heard, obj.Revision) }
	f.putSpec(Spec{Replicas: 2})
	require.NoError(t, f.reconcile())
	require.Equal(t, []int64{f.revision()}, heard)
	f.assertIdle()
	assert.Len(t, heard, 1, "an idle reconcile reported a write")
}
