package main

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/intent"
	"github.com/converge-go/converge/reconcile/kit/owners"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/reconcile/kit/schedule"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// These tests run the operator's BackupSchedule and Backup reconcilers, as
// the operator wires them, on a testing/synctest bubble's fake clock, over
// the API-server layer on memory, with a fake world of dumps.

// fakeDumps is a world of dumps that take took each and succeed while ok
// says so; it records the most dumps it has seen running at once.
type fakeDumps struct {
	took time.Duration
	mu   sync.Mutex
	ok   bool
	runs map[string]fakeDump
	busy int
	most int
	wake func(key string)
}

type fakeDump struct {
	key  string
	end  time.Time
	ok   bool
	done bool
}

func (f *fakeDumps) setOK(ok bool) { f.mu.Lock(); f.ok = ok; f.mu.Unlock() }

func (f *fakeDumps) find(_ context.Context, id string) (intent.Found[DumpResult], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.runs[id]
	switch {
	case !ok:
		return intent.Found[DumpResult]{State: intent.Absent}, nil
	case time.Now().Before(d.end):
		return intent.Found[DumpResult]{State: intent.Running}, nil
	}
	if !d.done {
		d.done = true
		f.runs[id] = d
		f.busy--
	}
	res := DumpResult{OK: d.ok, File: "/backups/" + id + ".dump"}
	if !d.ok {
		res = DumpResult{Error: "pg_dump: connection refused"}
	}
	return intent.Found[DumpResult]{State: intent.Finished, Result: res}, nil
}

func (f *fakeDumps) start(ctx context.Context, key, id string, _ BackupSpec) (intent.Found[DumpResult], error) {
	f.mu.Lock()
	f.runs[id] = fakeDump{key: key, end: time.Now().Add(f.took), ok: f.ok}
	f.busy++
	f.most = max(f.most, f.busy)
	wake := f.wake
	f.mu.Unlock()
	time.AfterFunc(f.took, func() { wake(key) })
	return f.find(ctx, id)
}

func (f *fakeDumps) remove(context.Context, intent.Record[DumpResult]) error { return nil }

// scheduleWorld is a schedule's stores and dumps.
type scheduleWorld struct {
	schedules *apistore.Store[*BackupSchedule]
	backups   *apistore.Store[*Backup]
	dumps     *fakeDumps
}

func newScheduleWorld(t *testing.T, spec BackupScheduleSpec, took time.Duration) *scheduleWorld {
	schedules, err := apistore.New(store.NewMemory[*BackupSchedule](), resource.Kind[BackupScheduleSpec, BackupScheduleStatus]{})
	require.NoError(t, err)
	backups, err := apistore.New(store.NewMemory[*Backup](), resource.Kind[BackupSpec, BackupStatus]{})
	require.NoError(t, err)
	_, err = resource.PutSpec(context.Background(), schedules, SchedulePrefix+"nightly", spec)
	require.NoError(t, err)
	return &scheduleWorld{schedules: schedules, backups: backups, dumps: &fakeDumps{took: took, ok: true, runs: map[string]fakeDump{}}}
}

// start runs the two controllers, as a starting operator does, until the
// returned function stops them.
func (w *scheduleWorld) start(t *testing.T) (stop func()) {
	var sc *reconcile.Controller[*BackupSchedule]
	o := &Operator{}
	slots, err := schedule.NewSource(o.scheduleEntries, schedule.Options{Name: "backup schedules"})
	require.NoError(t, err)
	children := owners.Source(w.backups, BackupPrefix, resource.Kind[BackupSpec, BackupStatus]{})
	cfg := withDefaults(Config{})
	sc, err = reconcile.New(w.schedules, &scheduleReconciler{backups: w.backups},
		controllerOptions[*BackupSchedule](cfg, "backupschedules", SchedulePrefix, nil, slots, children))
	require.NoError(t, err)
	o.Schedules = sc
	bc, err := reconcile.New(w.backups, &backupReconciler{dumps: w.dumps, poll: 10 * time.Second},
		controllerOptions[*Backup](cfg, "backups", BackupPrefix, nil))
	require.NoError(t, err)
	w.dumps.mu.Lock()
	w.dumps.wake = func(key string) { _ = bc.Enqueue(key) }
	w.dumps.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- sc.Run(ctx) }()
	go func() { done <- bc.Run(ctx) }()
	return func() {
		cancel()
		require.NoError(t, errors.Join(<-done, <-done))
	}
}

// slots returns the minutes past midnight (the bubble's clock starts at
// 2000-01-01 00:00 UTC) of the schedule's backups, and how each ended.
func (w *scheduleWorld) slots(t *testing.T) (minutes []int, phases []BackupPhase) {
	prefix := BackupPrefix + "nightly/"
	objs, _, err := w.backups.List(context.Background(), prefix)
	require.NoError(t, err)
	for _, o := range objs {
		slot, ok := schedule.SlotOf(prefix, o.Key)
		require.True(t, ok, o.Key)
		minutes = append(minutes, int(slot.Sub(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).Minutes()))
		phases = append(phases, o.Value.Status.Phase)
	}
	return minutes, phases
}

func span(from, to int) []int {
	var out []int
	for m := from; m <= to; m++ {
		out = append(out, m)
	}
	return out
}

func every(n int, p BackupPhase) []BackupPhase {
	out := make([]BackupPhase, n)
	for i := range out {
		out[i] = p
	}
	return out
}

// A schedule every minute, created at midnight, backs up at once and then
// at each of the nine slots that follow: ten slots, ten backups, each
// under its slot's key, each succeeded.
func TestTenSlotsMakeTenBackupsEachUnderItsSlotsKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newScheduleWorld(t, BackupScheduleSpec{Database: "app", Schedule: "* * * * *", KeepSucceeded: 100}, time.Second)
		stop := w.start(t)
		time.Sleep(9*time.Minute + 30*time.Second)
		synctest.Wait()
		minutes, phases := w.slots(t)
		require.Equal(t, span(0, 9), minutes)
		require.Equal(t, every(10, BackupSucceeded), phases)
		st := w.status(t)
		require.Equal(t, 10, st.Backups)
		require.Empty(t, st.Running)
		stop()
	})
}

// An operator down over five slots makes one backup when it starts again,
// for the latest slot that passed, not five; then it follows the schedule.
func TestDowntimeOverFiveSlotsMakesOneCatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newScheduleWorld(t, BackupScheduleSpec{Database: "app", Schedule: "* * * * *", KeepSucceeded: 100}, time.Second)
		stop := w.start(t)
		time.Sleep(2*time.Minute + 30*time.Second) // slots 0, 1, 2
		synctest.Wait()
		stop()
		time.Sleep(5 * time.Minute) // slots 3 to 7 pass while it is down
		stop = w.start(t)
		synctest.Wait()
		minutes, _ := w.slots(t)
		require.Equal(t, []int{0, 1, 2, 7}, minutes, "one catch-up, for the latest slot")
		time.Sleep(time.Minute) // slot 8
		synctest.Wait()
		minutes, _ = w.slots(t)
		require.Equal(t, []int{0, 1, 2, 7, 8}, minutes)
		stop()
	})
}

// Backups that keep failing never cost the schedule its last good one:
// retention keeps the newest success whatever failed after it, and the
// newest failures it is told to; once a newer backup succeeds, the older
// success goes.
func TestFailingBackupsNeverDeleteTheLastGoodOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newScheduleWorld(t, BackupScheduleSpec{Database: "app", Schedule: "* * * * *", KeepSucceeded: 1, KeepFailed: 2}, time.Second)
		stop := w.start(t)
		synctest.Wait() // slot 0 succeeds
		w.dumps.setOK(false)
		time.Sleep(9*time.Minute + 30*time.Second) // slots 1 to 9 fail
		synctest.Wait()
		minutes, phases := w.slots(t)
		require.Equal(t, []int{0, 8, 9}, minutes)
		require.Equal(t, []BackupPhase{BackupSucceeded, BackupFailed, BackupFailed}, phases)
		require.Equal(t, BackupPrefix+"nightly/20000101T000000Z", w.status(t).LastSucceeded)
		w.dumps.setOK(true)
		time.Sleep(time.Minute) // slot 10 succeeds: the success of slot 0 goes
		synctest.Wait()
		minutes, phases = w.slots(t)
		require.Equal(t, []int{8, 9, 10}, minutes)
		require.Equal(t, []BackupPhase{BackupFailed, BackupFailed, BackupSucceeded}, phases)
		stop()
	})
}

// A backup that runs longer than the slots come keeps the next from
// starting: at most one backup of a schedule runs at a time, and the slot
// due once it ends is the latest that passed meanwhile.
func TestAtMostOneBackupOfAScheduleRunsAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newScheduleWorld(t, BackupScheduleSpec{Database: "app", Schedule: "* * * * *", KeepSucceeded: 100}, 150*time.Second)
		stop := w.start(t)
		time.Sleep(10*time.Minute + 30*time.Second)
		synctest.Wait()
		minutes, _ := w.slots(t)
		require.Equal(t, []int{0, 2, 5, 7, 10}, minutes, "each backup takes 2.5 minutes: the slots while it runs are skipped")
		w.dumps.mu.Lock()
		most := w.dumps.most
		w.dumps.mu.Unlock()
		require.Equal(t, 1, most, "dumps running at once")
		stop()
	})
}

func (w *scheduleWorld) status(t *testing.T) BackupScheduleStatus {
	obj, err := w.schedules.Get(context.Background(), SchedulePrefix+"nightly")
	require.NoError(t, err)
	return obj.Value.Status
}
