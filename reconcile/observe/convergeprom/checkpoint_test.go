package convergeprom_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/checkpointtest"
	"github.com/converge-go/converge/reconcile/observe/convergeprom"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/checkpoint"
	"github.com/converge-go/converge/store/faultstore"
)

var checkpointSeries = []string{"converge_checkpoint_active", "converge_checkpoint_revision", "converge_checkpoint_age_seconds",
	"converge_checkpoint_writes_total", "converge_checkpoint_write_failures_total", "converge_checkpoint_damaged_total"}

// TestCheckpointSeriesFollowAControllerRunningFromItsCheckpoint: a watched
// controller with a checkpoint reports converge_checkpoint_active 0 and
// its counters at 0 before it needs the checkpoint (no revision or age,
// none loaded or written yet); once its store has not been listed for
// StartAfter, active 1 with the checkpoint's revision and age; once the
// store serves and the cache has caught up, active 0 with the revision
// and age of the checkpoint written since and the writes counted. A
// watched controller without a checkpoint has none of these series.
func TestCheckpointSeriesFollowAControllerRunningFromItsCheckpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, mem, cp, rev := checkpointed(t, time.Now().Add(-time.Minute))
		fs, err := faultstore.New(mem, faultstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		fs.SetOutage(faultstore.Loud)
		m, err := convergeprom.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		c := newCheckpointed(t, m, fs, cp)
		watched(t, m, store.NewMemory[string](), reconcile.Options[string]{Name: "plain"})
		synctest.Wait()
		requireSeries(t, reg, checkpointSeriesText(0, nil, 0, 0, 0), checkpointSeries...)

		<-time.After(3 * heartbeat) // StartAfter
		synctest.Wait()
		requireSeries(t, reg, checkpointSeriesText(1, &checkpoint.Status{Revision: rev, Age: time.Minute + 3*heartbeat}, 0, 0, 0), checkpointSeries...)

		obj, err := mem.Create(context.Background(), "d", "ok")
		if err != nil {
			t.Fatal(err)
		}
		fs.SetOutage(faultstore.Up)
		if err := c.WaitForRevision(context.Background(), obj.Revision); err != nil {
			t.Fatal(err)
		}
		<-time.After(checkpoint.DefaultInterval)
		synctest.Wait()
		st := c.Health().Checkpoint
		if st.Active || st.Revision != obj.Revision || st.Writes == 0 {
			t.Fatalf("Health().Checkpoint = %+v, want inactive, written at revision %d", st, obj.Revision)
		}
		requireSeries(t, reg, checkpointSeriesText(0, &st, st.Writes, 0, 0), checkpointSeries...)
	})
}

// TestADamagedCheckpointAndFailedWritesAreCounted: a controller whose
// checkpoint is damaged counts it in converge_checkpoint_damaged_total
// when it needs it and refuses it (active stays 0); its failed writes
// count in converge_checkpoint_write_failures_total, and once writes
// succeed, writes_total counts them and revision and age appear.
func TestADamagedCheckpointAndFailedWritesAreCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, mem, cp, rev := checkpointed(t, time.Now())
		cp.SetDamaged(true)
		cp.SetWriteErr(errors.New("disk full"))
		fs, err := faultstore.New(mem, faultstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		fs.SetOutage(faultstore.Loud)
		m, err := convergeprom.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		c := newCheckpointed(t, m, fs, cp)
		<-time.After(10 * heartbeat)
		synctest.Wait()
		requireSeries(t, reg, checkpointSeriesText(0, nil, 0, 0, 1), checkpointSeries...)

		fs.SetOutage(faultstore.Up)
		if err := c.WaitForSync(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-time.After(checkpoint.DefaultInterval) // the list's write comes at the next interval
		synctest.Wait()
		failures := c.Health().Checkpoint.Failures
		if failures == 0 {
			t.Fatal("no write failed")
		}
		requireSeries(t, reg, checkpointSeriesText(0, nil, 0, failures, 1), checkpointSeries...)

		cp.SetWriteErr(nil)
		<-time.After(checkpoint.DefaultInterval)
		synctest.Wait()
		st := c.Health().Checkpoint
		if st.Writes == 0 || st.Revision != rev || st.Failures != failures {
			t.Fatalf("Health().Checkpoint = %+v, want written at revision %d after %d failures", st, rev, failures)
		}
		requireSeries(t, reg, checkpointSeriesText(0, &st, st.Writes, failures, 1), checkpointSeries...)
	})
}

// checkpointSeriesText is the exposition of the checkpoint series of the
// controller "roles": active, revision and age of at (none if nil), and
// the counters.
func checkpointSeriesText(active int, at *checkpoint.Status, writes, failures, damaged int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# HELP converge_checkpoint_active 1 while the controller runs from its checkpoint (its store not listed in time at its start, and not caught up with since), else 0
# TYPE converge_checkpoint_active gauge
converge_checkpoint_active{controller="roles"} %d
`, active)
	if at != nil {
		fmt.Fprintf(&b, `# HELP converge_checkpoint_age_seconds Seconds since the controller last heard from its store in the checkpoint it runs from while active, else in the latest written
# TYPE converge_checkpoint_age_seconds gauge
converge_checkpoint_age_seconds{controller="roles"} %g
# HELP converge_checkpoint_revision Store revision of the checkpoint the controller runs from while active, else of the latest written
# TYPE converge_checkpoint_revision gauge
converge_checkpoint_revision{controller="roles"} %d
`, at.Age.Seconds(), at.Revision)
	}
	fmt.Fprintf(&b, `# HELP converge_checkpoint_damaged_total Damaged checkpoints the controller found and ignored
# TYPE converge_checkpoint_damaged_total counter
converge_checkpoint_damaged_total{controller="roles"} %d
# HELP converge_checkpoint_write_failures_total Checkpoint writes that failed (the next write is then a whole one)
# TYPE converge_checkpoint_write_failures_total counter
converge_checkpoint_write_failures_total{controller="roles"} %d
# HELP converge_checkpoint_writes_total Checkpoints the controller wrote
# TYPE converge_checkpoint_writes_total counter
converge_checkpoint_writes_total{controller="roles"} %d
`, damaged, failures, writes)
	return b.String()
}

// heartbeat is the checkpointed controller's HeartbeatInterval: its
// StartAfter is three of them.
const heartbeat = time.Second

// checkpointed returns a registry, a store holding three keys and a
// checkpoint of it at its revision, seen at seen.
func checkpointed(t *testing.T, seen time.Time) (*prometheus.Registry, *store.Memory[string], *checkpointtest.Memory[string], int64) {
	t.Helper()
	mem := store.NewMemory[string]()
	for _, key := range []string{"a", "b", "c"} {
		if _, err := mem.Create(context.Background(), key, "ok"); err != nil {
			t.Fatal(err)
		}
	}
	objs, rev, err := mem.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := mem.Identity(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cp := checkpointtest.NewMemory(&checkpoint.State[string]{Identity: id, Revision: rev, Seen: seen, Objects: objs})
	return prometheus.NewRegistry(), mem, cp, rev
}

// newCheckpointed runs a watched controller named "roles" of s with cp as
// its checkpoint until the test ends, without waiting for it to sync.
func newCheckpointed(t *testing.T, m *convergeprom.Metrics, s store.Store[string], cp checkpoint.Store[string]) *reconcile.Controller[string] {
	t.Helper()
	return watched(t, m, s, reconcile.Options[string]{Name: "roles", HeartbeatInterval: heartbeat,
		Checkpoint: checkpoint.Options[string]{Store: cp}})
}

// watched runs an instrumented, watched controller of s with opts until
// the test ends, without waiting for it to sync.
func watched(t *testing.T, m *convergeprom.Metrics, s store.Store[string], opts reconcile.Options[string]) *reconcile.Controller[string] {
	t.Helper()
	ctl := convergeprom.Instrument(m, &opts)
	c, err := reconcile.New(s, reconcile.ReconcilerFunc[string](func(context.Context, reconcile.Request[string]) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctl.Watch(c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return c
}
