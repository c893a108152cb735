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
// executable, and fails the test if it fails. The narration and the
// controller's logs are shown only if the test fails.
func runDemo(t *testing.T, cfg Config) Report {
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
	return rep
}

func TestDemoConvergesEveryStepAndServesItsPageAndMetrics(t *testing.T) {
	outage := 2 * time.Second
	if testing.Short() {
		outage = 500 * time.Millisecond
	}
	// The debug page and the metrics are served while the demo runs.
	var page, metrics string
	rep := runDemo(t, Config{Replicas: 3, Outage: outage, HTTPAddr: "127.0.0.1:0", OnServing: func(base string) {
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
	require.Equal(t, []string{"converge", "power failure", "scale up", "scale down", "store outage"}, names)
	want := []int{3, 3, 5, 2, 2}
	gens := []int64{1, 1, 2, 3, 3}
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
	final := rep.Phases[4].Pods
	assert.NotContains(t, final, o.Victim)
	for _, pid := range o.ReplacedWhileDown {
		assert.Contains(t, final, pid)
	}
	assert.Equal(t, 2, rep.Final.Spec.Replicas)
	assert.Equal(t, 2, rep.Final.Status.ReadyReplicas)
	assert.Equal(t, final, rep.Final.Status.Pods)
	assert.Equal(t, int64(3), rep.Final.ObservedGeneration)

	// Every pod is accounted for: killed by the demo, stopped by the
	// controller, or stopped at shutdown; none is left.
	assert.Equal(t, 4, rep.Killed)
	assert.Equal(t, rep.Killed, rep.BeforeShutdown.Exited)
	assert.Equal(t, 3+batchPods, rep.BeforeShutdown.Stopped, "scale down from 5 to 2, then the deleted replica set's pods")
	assert.Equal(t, len(rep.StartedPIDs), rep.Stats.Started)
	assert.Equal(t, rep.Stats.Started, rep.Stats.Stopped+rep.Stats.Exited)
	assert.Equal(t, 3+3+2+1+batchPods, rep.Stats.Started)
	assert.Empty(t, rep.Leftover)
	assert.Len(t, slices.Compact(slices.Sorted(slices.Values(rep.StartedPIDs))), len(rep.StartedPIDs))
}

// A replica set deleted while its controller is down (the demo's last
// step) stays in the store, marked, its pods, real processes, running;
// the next controller, which has nothing cached, kills them and only then
// is the replica set gone. The demo's own replica set keeps its pods, and
// no process is left at the end (runDemo checks).
func TestDemoKillsThePodsOfAReplicaSetDeletedWhileTheControllerWasDown(t *testing.T) {
	rep := runDemo(t, Config{Replicas: 1, Outage: 200 * time.Millisecond})
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
	assert.Equal(t, 2, rep.Controllers)
	assert.Equal(t, 0, rep.BeforeShutdown.Exited-rep.Killed, "a pod died that nobody killed")
}

// With a store directory, the desired state survives a restart: the second
// run starts the pods the first one left in the spec before it goes on.
func TestDemoResumesFromStore(t *testing.T) {
	dir := t.TempDir()
	first := runDemo(t, Config{Replicas: 2, StoreDir: dir, Outage: 200 * time.Millisecond})
	require.Equal(t, 1, first.Final.Spec.Replicas)
	require.Equal(t, int64(3), first.Final.Generation)

	second := runDemo(t, Config{Replicas: 2, StoreDir: dir, Outage: 200 * time.Millisecond})
	require.NotNil(t, second.Resumed)
	assert.Equal(t, 1, second.Resumed.Want)
	assert.Len(t, second.Resumed.Pods, 1)
	assert.Equal(t, int64(3), second.Resumed.ObservedGeneration)
	for _, pid := range first.StartedPIDs {
		assert.NotContains(t, second.Resumed.Pods, pid, "a pod of the first run")
	}
	assert.Equal(t, int64(6), second.Final.Generation)
	assert.Equal(t, int64(6), second.Final.ObservedGeneration)
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
