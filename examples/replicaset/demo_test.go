package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/internal/syncbuf"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runDemo runs the demo in process, with this test binary as the pods'
// executable, and fails the test if it fails; it returns the report and the
// narration. The narration and the controller's logs are shown only if the
// test fails.
func runDemo(t *testing.T, cfg Config) (Report, string) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	var out syncbuf.Buffer
	cfg.Executable, cfg.Out = exe, &out
	cfg.Logger = slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // hang guard only
	defer cancel()
	rep, err := Run(ctx, cfg)
	if err != nil || t.Failed() {
		t.Logf("demo output:\n%s", out.String())
	}
	require.NoError(t, err)
	demo.AssertNoProcessLeft(t, rep.StartedPIDs)
	return rep, out.String()
}

// fast is the timing of the tests that do not look at the checkpoint's
// own pace: a short outage, a checkpoint written every 50ms, and a
// controller that starts from it after 300ms without its store.
func fast(cfg Config) Config {
	cfg.Outage, cfg.CheckpointInterval, cfg.StartAfter = 200*time.Millisecond, 50*time.Millisecond, 300*time.Millisecond
	return cfg
}

func TestDemoConvergesEveryStepAndServesItsPageAndMetrics(t *testing.T) {
	outage, startAfter := 2*time.Second, time.Second
	if testing.Short() {
		outage, startAfter = 500*time.Millisecond, 300*time.Millisecond
	}
	// The debug page and the metrics are served while the demo runs. The
	// checkpoint is written at its default interval, as in the demo.
	var page, metrics string
	rep, out := runDemo(t, Config{Replicas: 3, Outage: outage, StartAfter: startAfter, HTTPAddr: "127.0.0.1:0", OnServing: func(base string) {
		page, metrics = httpGet(t, base+"/debug/converge/?format=json"), httpGet(t, base+"/metrics")
	}})
	assert.Contains(t, page, `"name": "replicaset"`, "the debug page does not show the controller")
	assert.Contains(t, metrics, `controller_runtime_max_concurrent_reconciles{controller="replicaset"} 1`)
	assert.Contains(t, metrics, `workqueue_adds_total{controller="replicaset",name="replicaset"}`)

	// Every step converged: the pods the spec asks for, and a status that
	// records exactly them for the latest generation.
	names := make([]string, len(rep.Phases))
	for i, p := range rep.Phases {
		names[i] = p.Name
		assert.Len(t, p.Pods, p.Want, p.Name)
		assert.Equal(t, p.Want, p.Ready, p.Name)
		assert.Equal(t, p.Generation, p.ObservedGeneration, p.Name)
	}
	require.Equal(t, []string{"converge", "power failure", "scale up", "scale down", "store outage", stepBothGone, stepDiskLost}, names)
	want := []int{3, 3, 5, 2, 2, 2, 3}
	gens := []int64{1, 1, 2, 3, 3, 3, 4}
	for i, p := range rep.Phases {
		assert.Equal(t, want[i], p.Want, p.Name)
		assert.Equal(t, gens[i], p.Generation, p.Name)
	}
	assert.Nil(t, rep.Resumed)

	// The power failure replaced every pod.
	before, after := rep.Phases[0].Pods, rep.Phases[1].Pods
	for _, pid := range before {
		assert.NotContains(t, after, pid, "pod %d survived the power failure", pid)
	}

	// The pod killed during the outage was replaced while the store was
	// down, and the status, stale meanwhile, caught up.
	o := rep.Outage
	require.NotZero(t, o.Victim)
	assert.GreaterOrEqual(t, o.Down, outage)
	assert.Len(t, o.ReplacedWhileDown, 1, "pods started while the store was down")
	assert.Contains(t, o.StaleStatus, o.Victim, "status written while the store was down")
	afterOutage := rep.Phases[4].Pods
	assert.NotContains(t, afterOutage, o.Victim)
	for _, pid := range o.ReplacedWhileDown {
		assert.Contains(t, afterOutage, pid)
	}

	// With the store and the controller both gone, the fresh controller
	// ran from its checkpoint, which held the latest change, no sooner
	// than StartAfter (it tries its store first), and replaced the pod
	// killed meanwhile; Health said so, with the checkpoint's revision and
	// age. Once the store returned, the spec was the one before: nothing
	// was lost.
	c := rep.Checkpoint
	require.NotZero(t, c.Victim)
	assert.Equal(t, startAfter, c.StartAfter)
	assert.GreaterOrEqual(t, c.ActiveAfter, c.StartAfter)
	assert.True(t, c.Health.Enabled)
	assert.True(t, c.Health.Active, "Health.Checkpoint once the victim was replaced")
	assert.GreaterOrEqual(t, c.Health.Revision, c.Written)
	assert.Positive(t, c.Health.Age)
	assert.Contains(t, afterOutage, c.Victim)
	assert.Len(t, c.ReplacedWhileDown, 1, "pods started from the checkpoint")
	final := rep.Phases[5].Pods
	assert.NotContains(t, final, c.Victim)
	for _, pid := range c.ReplacedWhileDown {
		assert.Contains(t, final, pid)
	}
	assert.Equal(t, int64(3), c.Generation)
	assert.Equal(t, c.Generation, rep.Phases[5].Generation, "the spec after the store returned")
	assert.Positive(t, c.CaughtUp)
	assert.Regexp(t, `\n  checkpoint: +store and controller gone: a fresh controller ran from its checkpoint \(revision \d+, `, out, "the summary")
	assert.Contains(t, out, "controller: runs from its checkpoint of revision ", "the narration")

	assert.Equal(t, 3, rep.Final.Spec.Replicas)
	assert.Equal(t, 3, rep.Final.Status.ReadyReplicas)
	assert.Equal(t, rep.Phases[6].Pods, rep.Final.Status.Pods)
	assert.Equal(t, int64(4), rep.Final.ObservedGeneration)

	// Every pod is accounted for: killed by the demo, stopped by the
	// controller, or stopped at shutdown; none is left.
	assert.Equal(t, 5, rep.Killed)
	assert.Equal(t, rep.Killed, rep.BeforeShutdown.Exited)
	assert.Equal(t, 3+batchPods, rep.BeforeShutdown.Stopped, "scale down from 5 to 2, then the deleted replica set's pods")
	assert.Equal(t, len(rep.StartedPIDs), rep.Stats.Started)
	assert.Equal(t, rep.Stats.Started, rep.Stats.Stopped+rep.Stats.Exited)
	assert.Equal(t, 3+3+2+1+1+batchPods+1, rep.Stats.Started)
	assert.Empty(t, rep.Leftover)
	assert.Len(t, slices.Compact(slices.Sorted(slices.Values(rep.StartedPIDs))), len(rep.StartedPIDs))
}

// A replica set deleted while its controller is down (the demo's last
// step) stays in the store, marked, its pods, real processes, running;
// the next controller, which has nothing cached, kills them and only then
// is the replica set gone. The demo's own replica set keeps its pods, and
// no process is left at the end (runDemo checks).
func TestDemoKillsThePodsOfAReplicaSetDeletedWhileTheControllerWasDown(t *testing.T) {
	rep, _ := runDemo(t, fast(Config{Replicas: 1}))
	d := rep.Deletion
	require.Equal(t, batchKey, d.Key)
	require.Len(t, d.Pods, batchPods)
	assert.True(t, d.Marked, "the deletion did not wait for the controller")
	assert.Equal(t, d.Pods, d.RunningWhileDown, "the pods of the marked replica set while the controller was down")
	assert.Positive(t, d.Gone)
	assert.Empty(t, d.Left, "pods of the deleted replica set still exist")
	for _, pid := range d.Pods {
		assert.Contains(t, rep.StartedPIDs, pid)
	}
	require.Len(t, d.WebPods, 1)
	assert.Equal(t, d.WebPods, d.WebPodsAfter, "the next controller replaced the pods of a replica set it should have adopted")
	assert.Equal(t, 4, rep.Controllers, "the first, the one started from the checkpoint, the one after the deletion, the one on the restored store")
	assert.Equal(t, 0, rep.BeforeShutdown.Exited-rep.Killed, "a pod died that nobody killed")
}

// The store's disk lost a moment after a write (the demo's last step):
// the store restored from the snapshot and the change log holds the write
// acknowledged before the loss, under a new identity, above every
// revision of the lost store; the controller started on it converges to
// that spec and undoes nothing: the pods that ran at the loss run on,
// none is stopped.
func TestDemoRestoresTheLastAcknowledgedWriteAfterTheStoresDiskIsLost(t *testing.T) {
	rep, out := runDemo(t, fast(Config{Replicas: 2}))
	d := rep.DiskLoss
	require.Equal(t, 2, d.Want, "scaled down to 1, then up by one")
	require.Positive(t, d.Acked)

	// The last acknowledged write is present after the restore, read from
	// the lost store's log up to its last revision.
	assert.Equal(t, d.Want, d.Found.Spec.Replicas, "the spec the restored store holds")
	assert.Equal(t, d.Generation, d.Found.Generation, "its generation")
	assert.Equal(t, d.Identity, d.Point.Identity, "the log read")
	assert.GreaterOrEqual(t, d.Point.Revision, d.Acked)
	assert.LessOrEqual(t, d.Point.Revision, d.Revision)
	assert.Positive(t, d.Point.Records)
	assert.Positive(t, d.Shipped)

	// A new identity, above every revision of the lost store.
	assert.NotEmpty(t, d.Restored.Identity)
	assert.NotEqual(t, d.Identity, d.Restored.Identity)
	assert.Greater(t, d.Restored.Revision, d.Revision)

	// The pods converge to the restored spec, undoing nothing.
	last := rep.Phases[len(rep.Phases)-1]
	require.Equal(t, stepDiskLost, last.Name)
	assert.Equal(t, d.Want, last.Want)
	assert.Len(t, last.Pods, d.Want)
	assert.Equal(t, d.Want, last.Ready)
	assert.Equal(t, d.Generation, last.ObservedGeneration)
	assert.Zero(t, d.Stopped, "pods stopped after the write: the write undone")
	for _, pid := range d.PodsAtLoss {
		assert.Contains(t, last.Pods, pid, "a pod that ran at the loss")
	}
	assert.Positive(t, d.Reconciled)
	assert.Equal(t, d.Want, rep.Final.Spec.Replicas)
	assert.Equal(t, d.Generation, rep.Final.ObservedGeneration)
	assert.Regexp(t, `\n  disk loss: +web scaled to 2 at revision \d+, in the change log .* the write present, as a new store above revision \d+;`, out, "the summary")
}

// With a store directory, the desired state survives a restart: the second
// run starts the pods the first one left in the spec before it goes on.
func TestDemoResumesFromStore(t *testing.T) {
	dir := t.TempDir()
	first, _ := runDemo(t, fast(Config{Replicas: 2, StoreDir: dir}))
	require.Equal(t, 2, first.Final.Spec.Replicas)
	require.Equal(t, int64(4), first.Final.Generation)

	second, _ := runDemo(t, fast(Config{Replicas: 2, StoreDir: dir}))
	require.NotNil(t, second.Resumed)
	assert.Equal(t, 2, second.Resumed.Want)
	assert.Len(t, second.Resumed.Pods, 2)
	assert.Equal(t, int64(4), second.Resumed.ObservedGeneration)
	for _, pid := range first.StartedPIDs {
		assert.NotContains(t, second.Resumed.Pods, pid, "a pod of the first run")
	}
	// The converge step writes the spec the store already holds (2
	// replicas): no generation. Scale up, scale down and the disk loss's
	// scale make three.
	assert.Equal(t, int64(7), second.Final.Generation)
	assert.Equal(t, int64(7), second.Final.ObservedGeneration)

	// The store resumed is the one the first run restored; its changes
	// went on into the same log, under its identity, from a snapshot of
	// it, from which the second run's restore began.
	d := second.DiskLoss
	assert.Equal(t, first.DiskLoss.Restored.Identity, d.Identity)
	assert.Equal(t, d.Identity, d.Point.Identity)
	assert.GreaterOrEqual(t, d.Point.SnapshotRevision, first.DiskLoss.Restored.Revision)
	assert.Equal(t, d.Want, d.Found.Spec.Replicas)
	assert.NotEqual(t, d.Identity, d.Restored.Identity)
}

func TestRunRejectsNoReplicas(t *testing.T) {
	_, err := Run(t.Context(), Config{Replicas: 0})
	require.Error(t, err)
	assert.False(t, errors.Is(err, context.Canceled))
}

// httpGet returns the body of a successful GET of url.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", url, body)
	return string(body)
}
