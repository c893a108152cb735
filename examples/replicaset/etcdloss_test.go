package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/internal/pods"
	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/checkpoint"
	"github.com/converge-go/converge/reconcile/resource"
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
// runs the replica set controller over a 3-member cluster of etcd server
// processes (etcdprocs), with its checkpoint in a bbolt file
// (boltstore.OpenCheckpoint). Once the checkpoint holds every change made
// (specs scaled, a replica set deleted through its finalizer), all three
// etcd processes are killed with SIGKILL, the controller crashes, and a pod
// is killed. A fresh controller (a new etcd client, a new cache, the
// checkpoint file opened again) starts while etcd is still down: after
// StartAfter it runs from the checkpoint, Health says so, and it replaces
// the pod; the deleted replica set is not brought back. etcd is restarted
// on the same data directories; everything converges, every spec as it was
// before the loss, none lost.
//
// The controller is restarted in this process, not SIGKILLed as a process
// of its own: the pods are children of this process's pods.Supervisor
// (examples/internal/pods), which drives only the pods it started (and
// whose pods die with it, Pdeathsig), so a separate controller process
// could not drive the same pods. The restart is fresh all the same, as the
// demo's rig makes it (process.go): nothing of the crashed controller
// survives but its checkpoint file, and no write reaches that file after
// the crash (checkpointFile).
func TestWithEveryEtcdMemberKilledARestartedControllerHealsFromItsCheckpointAndLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of etcd processes")
	}
	w := newLossWorld(t)
	ctx := t.Context()

	// Before the loss: the specs, and a replica set made and deleted.
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
	require.NoError(t, demo.WaitFor(ctx, lossGone+" gone", lossPatience, func() (bool, error) {
		_, err := w.raw.Get(ctx, lossGone)
		return errors.Is(err, store.ErrNotFound) && len(w.sup.Running(lossGone)) == 0, nil
	}))
	before := map[string]*controller.ReplicaSet{}
	for key, n := range lossSpecs {
		before[key] = w.converged(key, n).Value
	}
	rev, err := w.raw.Revision(ctx)
	require.NoError(t, err)
	first := w.ctrl
	require.NoError(t, demo.WaitFor(ctx, "the checkpoint to hold every change", lossPatience, func() (bool, error) {
		return first.ctrl.Health().Checkpoint.Revision >= rev, nil
	}))
	apiPods := pidsOf(w.sup.Running("api"))

	// The loss: every etcd process, then the controller, then a pod.
	for i := range w.cluster.Size() {
		require.NoError(t, w.cluster.Kill(i))
	}
	downAt := time.Now()
	require.NoError(t, first.crash())
	victim := w.sup.Running("web")[0].PID
	require.True(t, w.sup.Signal(victim, syscall.SIGKILL), "kill pod %d", victim)

	// A fresh controller, etcd still down, runs from its checkpoint.
	startedAt := time.Now()
	w.ctrl = w.start()
	require.NoError(t, demo.WaitFor(ctx, "the controller to run from its checkpoint", lossStartAfter+lossPatience, func() (bool, error) {
		return w.ctrl.ctrl.Health().Checkpoint.Active, nil
	}))
	activeAfter := time.Since(startedAt)
	assert.GreaterOrEqual(t, activeAfter, lossStartAfter, "started from the checkpoint before StartAfter")
	require.NoError(t, demo.WaitFor(ctx, fmt.Sprintf("a replacement for pod %d", victim), lossPatience, func() (bool, error) {
		return !w.sup.Alive(victim) && len(w.sup.Running("web")) == lossSpecs["web"], nil
	}))
	replacedAfter := time.Since(startedAt)
	var replaced []int
	for _, p := range w.sup.Running("web") {
		if p.Started.After(downAt) {
			replaced = append(replaced, p.PID)
		}
	}
	h := w.ctrl.ctrl.Health()
	assert.True(t, h.Checkpoint.Active, "Health.Checkpoint with etcd down")
	assert.GreaterOrEqual(t, h.Checkpoint.Revision, rev)
	assert.Positive(t, h.Checkpoint.Age)
	assert.Empty(t, h.Checkpoint.Refused)
	assert.Len(t, replaced, 1, "pods started with etcd down")
	assert.Equal(t, apiPods, pidsOf(w.sup.Running("api")), "api's pods, which nothing disturbed")
	assert.Empty(t, w.sup.Running(lossGone), "pods of a replica set deleted before the loss")

	// etcd back, on the same data: everything converges, nothing lost.
	restartAt := time.Now()
	for i := range w.cluster.Size() {
		require.NoError(t, w.cluster.Start(i))
	}
	require.NoError(t, w.cluster.WaitServing(ctx, lossPatience, w.cluster.Endpoints()...))
	for key, n := range lossSpecs {
		after := w.converged(key, n).Value
		assert.Equal(t, before[key].Spec, after.Spec, key)
		assert.Equal(t, before[key].Generation, after.Generation, key)
	}
	require.NoError(t, demo.WaitFor(ctx, "the controller to follow etcd again", lossPatience, func() (bool, error) {
		h := w.ctrl.ctrl.Health()
		return !h.Checkpoint.Active && len(h.Degraded) == 0, nil
	}))
	caughtUp := time.Since(restartAt)
	objs, _, err := w.raw.List(ctx, "")
	require.NoError(t, err)
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	assert.Equal(t, []string{"api", "web"}, keys, "the replica sets once etcd is back")
	assert.NotContains(t, pidsOf(w.sup.Running("web")), victim)
	assert.Subset(t, pidsOf(w.sup.Running("web")), replaced)
	t.Logf("etcd down %v; the controller ran from its checkpoint (revision %d, %v old) %v after its restart (StartAfter %v), "+
		"pod %d replaced %v after it; converged, following etcd again, %v after etcd's restart",
		restartAt.Sub(downAt).Round(time.Millisecond), h.Checkpoint.Revision, h.Checkpoint.Age.Round(time.Millisecond), activeAfter.Round(time.Millisecond),
		lossStartAfter, victim, replacedAfter.Round(time.Millisecond), caughtUp.Round(time.Millisecond))
}

// lossWorld is the etcd-loss test's world: the etcd cluster, the pods,
// the controller running now, and the test's own way to etcd (raw, and
// api with the API-server layer), a client of its own.
type lossWorld struct {
	t          *testing.T
	cluster    *etcdprocs.Cluster
	sup        *pods.Supervisor
	checkpoint string
	logs       *syncbuf.Buffer
	raw        *etcdstore.Store[*controller.ReplicaSet]
	api        *apistore.Store[*controller.ReplicaSet]
	ctrl       *lossController
}

// newLossWorld builds etcd (skipping the test if it cannot), starts its
// cluster, the supervisor and a first controller. Cleanup stops them all
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
	w := &lossWorld{t: t, cluster: cluster, sup: pods.NewSupervisor(pods.SupervisorConfig{Executable: exe, StopGrace: time.Second}),
		checkpoint: t.TempDir() + "/replicaset.checkpoint", logs: &syncbuf.Buffer{}}
	t.Cleanup(func() {
		if w.ctrl != nil {
			assert.NoError(t, w.ctrl.crash())
		}
		w.sup.Close()
		demo.AssertNoProcessLeft(t, w.sup.Started())
		cluster.Stop()
		if t.Failed() {
			t.Logf("controller logs:\n%s", w.logs.String())
			for name, out := range cluster.Logs(2000) {
				t.Logf("etcd %s output (tail):\n%s", name, out)
			}
		}
	})
	cli := lossClient(t, cluster)
	t.Cleanup(func() { _ = cli.Close() })
	w.raw, err = etcdstore.New[*controller.ReplicaSet](cli, "replicasets/")
	require.NoError(t, err)
	w.api, err = apistore.New(w.raw, resource.Kind[controller.Spec, controller.Status]{})
	require.NoError(t, err)
	w.ctrl = w.start()
	return w
}

// lossController is one run of a controller: its etcd client, its store
// and its cache are its own, as a process's would be.
type lossController struct {
	ctrl   *reconcile.Controller[*controller.ReplicaSet]
	file   *checkpointFile
	cancel context.CancelFunc
	done   chan error
}

// start starts a fresh controller over a new client of the cluster, with
// the checkpoint file opened again.
func (w *lossWorld) start() *lossController {
	t := w.t
	cli := lossClient(t, w.cluster)
	s, err := etcdstore.New[*controller.ReplicaSet](cli, "replicasets/", etcdstore.WithWatchOpenTimeout(time.Second))
	require.NoError(t, err)
	api, err := apistore.New(s, resource.Kind[controller.Spec, controller.Status]{})
	require.NoError(t, err)
	file, err := openCheckpointFile(w.checkpoint)
	require.NoError(t, err)
	ctrl, err := controller.New(api, controller.Config{
		Pods: w.sup, Exits: w.sup.Exits(), HeartbeatInterval: lossHeartbeat,
		Logger:     slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Checkpoint: checkpoint.Options[*controller.ReplicaSet]{Store: file, Interval: lossInterval},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	c := &lossController{ctrl: ctrl, file: file, cancel: cancel, done: make(chan error, 1)}
	go func() {
		err := ctrl.Run(ctx)
		c.done <- errors.Join(err, file.Close(), cli.Close())
	}()
	return c
}

// crash stops the controller as a killed process ends: nothing more
// reaches its checkpoint file, and nothing it cached outlives it.
func (c *lossController) crash() error {
	c.file.crash()
	c.cancel()
	return <-c.done
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
	obj, err := demo.WaitConverged(w.t.Context(), key, w.raw, w.sup, key, n, lossPatience, nil)
	require.NoError(w.t, err)
	return obj
}

// lossClient returns a new client of every member of the cluster.
func lossClient(t *testing.T, c *etcdprocs.Cluster) *clientv3.Client {
	t.Helper()
	cli, err := etcdprocs.Client(c.Endpoints()...)
	require.NoError(t, err)
	return cli
}
