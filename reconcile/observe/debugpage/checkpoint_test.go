package debugpage_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/checkpointtest"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/checkpoint"
	"github.com/converge-go/converge/store/faultstore"
)

// A controller running from its checkpoint shows it on the page: in the
// JSON as state active with the checkpoint's revision, seen time and age;
// in the HTML as "active", highlighted with "running from a checkpoint of
// revision R, age A". Once its store serves and the cache has caught up,
// it shows as standby with the revision and age of the latest checkpoint
// written (with the change made meanwhile) and the count of writes.
func TestAControllerRunningFromItsCheckpointShowsItsRevisionAndAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seen := time.Now().Add(-time.Minute)
		mem, cp, rev := checkpointed(t, seen)
		fs, err := faultstore.New(mem, faultstore.Options{})
		require.NoError(t, err)
		fs.SetOutage(faultstore.Loud)
		c := newCheckpointed(t, fs, cp)
		h := debugpage.New(debugpage.Options{}, c)
		<-time.After(3 * heartbeat) // StartAfter
		synctest.Wait()

		st := checkpointJSON(t, h)
		assert.Equal(t, debugpage.CheckpointActive, st["state"])
		assert.Equal(t, float64(rev), st["revision"])
		assert.Equal(t, seen.UTC().Format("2006-01-02T15:04:05.000Z07:00"), st["seen"])
		assert.Equal(t, "1m3s", st["age"])
		assert.Equal(t, float64(0), st["damaged"])
		html := get(t, h, "/").Body.String()
		assert.Contains(t, html, `<span class="checkpoint active">checkpoint: <b class="bad">active</b>, revision <span class="checkpoint-revision">`+
			strconv.FormatInt(rev, 10)+`</span>, age <span class="checkpoint-age">1m3s</span>, writes 0, failures 0, damaged 0</span>`)
		assert.Contains(t, html, `<div class="bad checkpoint-active">running from a checkpoint of revision `+strconv.FormatInt(rev, 10)+
			`, age 1m3s (seen `+seen.UTC().Format("2006-01-02T15:04:05.000Z07:00")+`): `)

		obj, err := mem.Create(context.Background(), "d", "ok")
		require.NoError(t, err)
		fs.SetOutage(faultstore.Up)
		require.NoError(t, c.WaitForRevision(context.Background(), obj.Revision))
		<-time.After(checkpoint.DefaultInterval)
		synctest.Wait()
		health := c.Health().Checkpoint
		require.False(t, health.Active)
		require.Positive(t, health.Writes)
		require.Equal(t, obj.Revision, health.Revision)
		st = checkpointJSON(t, h)
		assert.Equal(t, debugpage.CheckpointStandby, st["state"])
		assert.Equal(t, float64(obj.Revision), st["revision"])
		assert.Equal(t, float64(health.Writes), st["writes"])
		assert.Equal(t, duration(health.Age), st["age"])
		html = get(t, h, "/").Body.String()
		assert.Contains(t, html, `<span class="checkpoint standby">checkpoint: <b class="ok">standby</b>, revision <span class="checkpoint-revision">`+
			strconv.FormatInt(obj.Revision, 10)+`</span>, age <span class="checkpoint-age">`+duration(health.Age)+`</span>, writes `+strconv.FormatInt(health.Writes, 10)+`, failures 0, damaged 0</span>`)
		assert.NotContains(t, html, "running from a checkpoint")
	})
}

// A damaged checkpoint, refused at the start, shows on the page: in the
// JSON and the HTML why it was refused and the count of damaged
// checkpoints found; failed writes show with their count and the latest
// error, escaped in the HTML; no revision or age, none having been
// written.
func TestARefusedDamagedCheckpointShowsWhyAndItsCountsAndFailedWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, cp, _ := checkpointed(t, time.Now())
		cp.SetDamaged(true)
		cp.SetWriteErr(errors.New("disk <full>"))
		fs, err := faultstore.New(mem, faultstore.Options{})
		require.NoError(t, err)
		fs.SetOutage(faultstore.Loud)
		c := newCheckpointed(t, fs, cp)
		h := debugpage.New(debugpage.Options{}, c)
		<-time.After(10 * heartbeat)
		synctest.Wait()
		fs.SetOutage(faultstore.Up)
		require.NoError(t, c.WaitForSync(context.Background()))
		<-time.After(checkpoint.DefaultInterval) // the list's write comes at the next interval
		synctest.Wait()
		health := c.Health().Checkpoint
		require.Positive(t, health.Failures)

		st := checkpointJSON(t, h)
		assert.Equal(t, debugpage.CheckpointStandby, st["state"])
		assert.Equal(t, "damaged: checkpoint: damaged", st["refused"])
		assert.Equal(t, float64(1), st["damaged"])
		assert.Equal(t, float64(0), st["writes"])
		assert.Equal(t, float64(health.Failures), st["failures"])
		assert.Equal(t, "disk <full>", st["lastError"])
		for _, absent := range []string{"revision", "seen", "age"} {
			assert.NotContains(t, st, absent)
		}
		html := get(t, h, "/").Body.String()
		failures := strconv.FormatInt(health.Failures, 10)
		assert.Contains(t, html, `<span class="checkpoint standby">checkpoint: <b class="ok">standby</b>, none written yet, writes 0, failures <b class="bad">`+
			failures+`</b>, damaged <b class="bad">1</b></span>`)
		assert.Contains(t, html, `<div class="bad checkpoint-refused">checkpoint refused when the store could not be listed in time: damaged: checkpoint: damaged</div>`)
		assert.Contains(t, html, `<div class="bad checkpoint-failed">checkpoint writes failed: `+failures+` (the latest: disk &lt;full&gt;)</div>`)
		assert.NotContains(t, html, "<full>", "the error is escaped")
		assert.NotContains(t, html, "running from a checkpoint")
	})
}

// A controller without a checkpoint shows none, in the JSON and the HTML.
func TestAControllerWithoutACheckpointShowsNone(t *testing.T) {
	h := debugpage.New(debugpage.Options{}, fake{"plain"})
	assert.NotContains(t, get(t, h, "/?format=json").Body.String(), "checkpoint")
	assert.NotContains(t, get(t, h, "/").Body.String(), "checkpoint")
}

// heartbeat is the checkpointed controllers' HeartbeatInterval: their
// StartAfter is three of them.
const heartbeat = time.Second

// checkpointed returns a store holding three keys and a checkpoint of it
// at its revision, seen at seen.
func checkpointed(t *testing.T, seen time.Time) (*store.Memory[string], *checkpointtest.Memory[string], int64) {
	t.Helper()
	mem := store.NewMemory[string]()
	for _, key := range []string{"a", "b", "c"} {
		_, err := mem.Create(context.Background(), key, "ok")
		require.NoError(t, err)
	}
	objs, rev, err := mem.List(context.Background(), "")
	require.NoError(t, err)
	id, err := mem.Identity(context.Background())
	require.NoError(t, err)
	return mem, checkpointtest.NewMemory(&checkpoint.State[string]{Identity: id, Revision: rev, Seen: seen, Objects: objs}), rev
}

// newCheckpointed runs a controller named "roles" of s with cp as its
// checkpoint until the test ends, without waiting for it to sync.
func newCheckpointed(t *testing.T, s store.Store[string], cp checkpoint.Store[string]) *reconcile.Controller[string] {
	t.Helper()
	c, err := reconcile.New(s, reconcile.ReconcilerFunc[string](func(context.Context, reconcile.Request[string]) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}), reconcile.Options[string]{Name: "roles", HeartbeatInterval: heartbeat, Checkpoint: checkpoint.Options[string]{Store: cp}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	return c
}

// checkpointJSON returns the checkpoint of the page's only controller, as
// the JSON has it.
func checkpointJSON(t *testing.T, h *debugpage.Handler) map[string]any {
	t.Helper()
	var p struct {
		Controllers []struct{ Checkpoint map[string]any }
	}
	require.NoError(t, json.Unmarshal(get(t, h, "/?format=json").Body.Bytes(), &p))
	require.Len(t, p.Controllers, 1)
	require.NotNil(t, p.Controllers[0].Checkpoint, "no checkpoint in the JSON")
	return p.Controllers[0].Checkpoint
}

// duration is a duration as the page writes one of a second or more.
func duration(d time.Duration) string { return d.Round(time.Millisecond).String() }
