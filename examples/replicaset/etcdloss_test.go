package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/internal/pods"
	"github.com/converge-go/converge/examples/internal/poll"
	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/converge-go/converge/store/etcdstore/etcdprocs"
)

// The timings of the etcd-loss test: fast heartbeats, so that the
// documented bound of a start from the checkpoint, StartAfter (three
// heartbeats by default), is short; a checkpoint written every 50ms; and
// patience, a hang guard for each wait, not a claim about speed.
const (
	lossHeartbeat  = 250 * time.Millisecond
	lossStartAfter = 3 * lossHeartbeat
	lossInterval   = 50 * time.Millisecond
	lossPatience   = 20 * time.Second
)

// The replica sets of the etcd-loss test: their specs before the loss.
// lossGone is created and deleted before it, its pods stopped.
var lossSpecs = map[string]int{"api": 1, "web": 2}

const lossGone = "batch"

// TestWithEveryEtcdMemberKilledARestartedControllerHealsFromItsCheckpointAndLosesNothing
// runs the replica set controller as a process of its own (this test
// binary in controller mode, etcdlossproc_test.go: the demo's controller
// as process.go runs it, its debug page on a loopback port) over a
// 3-member cluster of etcd server processes (etcdprocs), with its
// checkpoint in a bbolt file (boltstore.OpenCheckpoint) and its pods
// recorded in a state directory (pods.OpenSupervisor), so that they
// outlive it. Once the checkpoint holds every change made (specs scaled, a
// replica set deleted through its finalizer), all three etcd processes are
// killed with SIGKILL, then the controller process, and a pod is killed.
// A new controller process starts on the same checkpoint file and state
// directory while etcd is still down: it adopts the pods that run on;
// after StartAfter it runs from the checkpoint, its debug page
// (Health.Checkpoint) says so, and it replaces the pod; the deleted replica
// set is not brought back. etcd is restarted on the same data directories;
// everything converges, every spec as it was before the loss, none lost.
//
// The test sees the pods through the state directory (pods.Recorded) and
// the controller through its debug page; its cleanup stops the pods the
// last controller process leaves, with a supervisor of that directory.
func TestWithEveryEtcdMemberKilledARestartedControllerHealsFromItsCheckpointAndLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of etcd processes")
	}
	w := newLossWorld(t)
	before, rev := w.changeEverythingBeforeTheLoss()
	r := w.loseEtcdAndTheController()
	w.restartFromTheCheckpoint(r, rev)
	w.bringEtcdBack(r, before)
	t.Logf("etcd down %v; the controller process SIGKILLed, the next ran from its checkpoint (revision %d, %v old) %v after its start (StartAfter %v), "+
		"pod %d replaced %v after it; converged, following etcd again, %v after etcd's restart",
		r.restartAt.Sub(r.downAt).Round(time.Millisecond), r.health.Revision, r.health.Age.Round(time.Millisecond), r.activeAfter.Round(time.Millisecond),
		lossStartAfter, r.victim, r.replacedAfter.Round(time.Millisecond), r.caughtUp.Round(time.Millisecond))
}

// lossRun is what the etcd-loss test saw and measured.
type lossRun struct {
	downAt, restartAt time.Time
	// victim is the pod killed with etcd and the controller down, apiPods
	// the pods of "api", which nothing disturbs.
	victim  int
	apiPods []int
	// activeAfter is from the new process's start to its run from the
	// checkpoint, replacedAfter to the victim's replacement; caughtUp is
	// from etcd's restart to the controller following it again.
	activeAfter, replacedAfter, caughtUp time.Duration
	health                               lossHealth
	// replaced are the pods started with etcd down.
	replaced []int
}

// changeEverythingBeforeTheLoss scales the replica sets, creates and
// deletes lossGone, and waits until the checkpoint holds it all. It
// returns the replica sets then and the store's revision.
func (w *lossWorld) changeEverythingBeforeTheLoss() (map[string]*controller.ReplicaSet, int64) {
	t, ctx := w.t, w.t.Context()
	w.put(lossGone, 1)
	for key, n := range lossSpecs {
		w.put(key, n+1)
		w.put(key, n)
	}
	w.converged(lossGone, 1)
	obj, err := w.raw.Get(ctx, lossGone)
	require.NoError(t, err)
	_, _, err = w.api.DeleteWith(ctx, lossGone, obj.Revision, apistore.Background)
	require.NoError(t, err)
	require.NoError(t, poll.Until(ctx, lossPatience, 10*time.Millisecond, lossGone+" gone", func() (bool, error) {
		_, err := w.raw.Get(ctx, lossGone)
		return errors.Is(err, store.ErrNotFound) && len(w.Running(lossGone)) == 0, nil
	}))
	before := map[string]*controller.ReplicaSet{}
	for key, n := range lossSpecs {
		before[key] = w.converged(key, n).Value
	}
	rev, err := w.raw.Revision(ctx)
	require.NoError(t, err)
	w.ctrl.waitHealth(t, "the checkpoint to hold every change", lossPatience, func(h lossHealth) bool { return h.Revision >= rev })
	return before, rev
}

// loseEtcdAndTheController kills every etcd process, then the controller
// process, whose pods run on, then one of them.
func (w *lossWorld) loseEtcdAndTheController() *lossRun {
	t := w.t
	r := &lossRun{apiPods: pidsOf(w.Running("api"))}
	for i := range w.cluster.Size() {
		require.NoError(t, w.cluster.Kill(i))
	}
	r.downAt = time.Now()
	w.ctrl.Kill()
	web := w.Running("web")
	require.Len(t, web, lossSpecs["web"], "web's pods, after their controller process was killed")
	assert.Equal(t, r.apiPods, pidsOf(w.Running("api")), "api's pods, after their controller process was killed")
	r.victim = web[0].PID
	require.NoError(t, syscall.Kill(r.victim, syscall.SIGKILL), "kill pod %d", r.victim)
	require.NoError(t, poll.Until(t.Context(), lossPatience, 10*time.Millisecond, fmt.Sprintf("pod %d to die", r.victim), func() (bool, error) {
		return len(pods.Survivors([]int{r.victim})) == 0, nil
	}))
	return r
}

// restartFromTheCheckpoint starts a new controller process, etcd still
// down, and checks that it runs from its checkpoint after StartAfter and
// replaces the victim, disturbing nothing else.
func (w *lossWorld) restartFromTheCheckpoint(r *lossRun, rev int64) {
	t := w.t
	w.ctrl = w.startController()
	w.ctrl.waitHealth(t, "the controller to run from its checkpoint", lossStartAfter+lossPatience, func(h lossHealth) bool { return h.Active })
	r.activeAfter = time.Since(w.ctrl.startedAt)
	assert.GreaterOrEqual(t, r.activeAfter, lossStartAfter, "started from the checkpoint before StartAfter")
	require.NoError(t, poll.Until(t.Context(), lossPatience, 10*time.Millisecond, fmt.Sprintf("a replacement for pod %d", r.victim), func() (bool, error) {
		web := pidsOf(w.Running("web"))
		return !slices.Contains(web, r.victim) && len(web) == lossSpecs["web"], nil
	}))
	r.replacedAfter = time.Since(w.ctrl.startedAt)
	for _, p := range w.Running("web") {
		if p.Started.After(r.downAt) {
			r.replaced = append(r.replaced, p.PID)
		}
	}
	var err error
	r.health, err = w.ctrl.health(t.Context())
	require.NoError(t, err)
	assert.True(t, r.health.Active, "Health.Checkpoint with etcd down")
	assert.GreaterOrEqual(t, r.health.Revision, rev)
	assert.Positive(t, r.health.Age)
	assert.Empty(t, r.health.Refused)
	assert.Len(t, r.replaced, 1, "pods started with etcd down")
	assert.Equal(t, r.apiPods, pidsOf(w.Running("api")), "api's pods, adopted by the new process")
	assert.Empty(t, w.Running(lossGone), "pods of a replica set deleted before the loss")
}

// bringEtcdBack restarts etcd on its data and checks that everything
// converges, every spec and generation as before the loss.
func (w *lossWorld) bringEtcdBack(r *lossRun, before map[string]*controller.ReplicaSet) {
	t, ctx := w.t, w.t.Context()
	r.restartAt = time.Now()
	for i := range w.cluster.Size() {
		require.NoError(t, w.cluster.Start(i))
	}
	require.NoError(t, w.cluster.WaitServing(ctx, lossPatience, w.cluster.Endpoints()...))
	for key, n := range lossSpecs {
		after := w.converged(key, n).Value
		assert.Equal(t, before[key].Spec, after.Spec, key)
		assert.Equal(t, before[key].Generation, after.Generation, key)
	}
	w.ctrl.waitHealth(t, "the controller to follow etcd again", lossPatience, func(h lossHealth) bool {
		return !h.Active && len(h.Degraded) == 0
	})
	r.caughtUp = time.Since(r.restartAt)
	objs, _, err := w.raw.List(ctx, "")
	require.NoError(t, err)
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	assert.Equal(t, []string{"api", "web"}, keys, "the replica sets once etcd is back")
	assert.NotContains(t, pidsOf(w.Running("web")), r.victim)
	assert.Subset(t, pidsOf(w.Running("web")), r.replaced)
}

// lossWorld is the etcd-loss test's world: the etcd cluster, the
// controller process running now and every one started, the checkpoint
// file and the pods' state directory they share, and the test's own way
// to etcd (raw, and api with the API-server layer), a client of its own.
type lossWorld struct {
	t                   *testing.T
	exe                 string // this test binary
	cluster             *etcdprocs.Cluster
	checkpoint, podsDir string
	logs                *syncbuf.Buffer // the controller processes' stderr
	raw                 *etcdstore.Store[*controller.ReplicaSet]
	api                 *apistore.Store[*controller.ReplicaSet]
	ctrl                *lossProc
	procs               []*lossProc
}

// newLossWorld builds etcd (skipping the test if it cannot), starts its
// cluster and a first controller process. Cleanup (stop) stops them all
// and checks that no pod is left.
func newLossWorld(t *testing.T) *lossWorld {
	bin, err := etcdprocs.Build(t.TempDir())
	if err != nil {
		t.Skipf("etcd server binary unavailable (go build go.etcd.io/etcd/server/v3): %v", err)
	}
	cluster, err := etcdprocs.Start(t.Context(), bin, t.TempDir(), 3, lossPatience)
	require.NoError(t, err)
	exe, err := os.Executable()
	require.NoError(t, err)
	w := &lossWorld{t: t, exe: exe, cluster: cluster, checkpoint: t.TempDir() + "/replicaset.checkpoint", podsDir: t.TempDir(), logs: &syncbuf.Buffer{}}
	t.Cleanup(w.stop)
	cli, err := etcdprocs.Client(cluster.Endpoints()...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	w.raw, err = etcdstore.New[*controller.ReplicaSet](cli, "replicasets/")
	require.NoError(t, err)
	w.api, err = apistore.New(w.raw, resource.Kind[controller.Spec, controller.Status]{})
	require.NoError(t, err)
	w.ctrl = w.startController()
	return w
}

// stop kills the controller processes, stops the pods they leave (a
// supervisor of their state directory adopts them, then Close stops
// them), checks that no pod started by any of them is left, and stops
// etcd.
func (w *lossWorld) stop() {
	t := w.t
	var started []int
	for _, p := range w.procs {
		p.Kill()
		started = append(started, p.started()...)
	}
	sup, err := pods.OpenSupervisor(pods.SupervisorConfig{Executable: w.exe, StopGrace: time.Second, StateDir: w.podsDir})
	if assert.NoError(t, err) {
		sup.Close()
		started = append(started, sup.Started()...)
	}
	demo.AssertNoProcessLeft(t, started)
	for _, pid := range pods.Survivors(started) {
		_ = syscall.Kill(-pid, syscall.SIGKILL) // after a failure: not to leak them
	}
	w.cluster.Stop()
	if t.Failed() {
		t.Logf("controller processes' output:\n%s", w.logs.String())
		for name, out := range w.cluster.Logs(2000) {
			t.Logf("etcd %s output (tail):\n%s", name, out)
		}
	}
}

// Running returns owner's pods, oldest first, as the pods' state
// directory records them: those of the controller process running now,
// or of the last one.
func (w *lossWorld) Running(owner string) []pods.Pod {
	all, err := pods.Recorded(w.podsDir)
	if err != nil {
		w.t.Errorf("pods: %v", err)
	}
	return slices.DeleteFunc(all, func(p pods.Pod) bool { return p.Owner != owner })
}

// put writes key's spec of n pods.
func (w *lossWorld) put(key string, n int) {
	w.t.Helper()
	_, err := resource.PutSpec(w.t.Context(), w.api, key, controller.Spec{Replicas: n})
	require.NoError(w.t, err)
}

// converged waits until key runs n pods and its stored status records
// them for its latest generation, and returns it.
func (w *lossWorld) converged(key string, n int) store.Object[*controller.ReplicaSet] {
	w.t.Helper()
	obj, err := demo.WaitConverged(w.t.Context(), key, w.raw, w, key, n, lossPatience, nil)
	require.NoError(w.t, err)
	return obj
}
