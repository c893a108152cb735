package schedule_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/schedule"
	"github.com/converge-go/converge/store"
)

var _ reconcile.Source = (*schedule.Source)(nil)

// backupEnv holds a scheduler's stores and the backup runner's switch.
type backupEnv struct {
	schedules *store.Memory[*backupSchedule]
	backups   *store.Memory[*backup]
	hold      atomic.Bool // the runner leaves backups running while set
	maxBusy   atomic.Int64
}

func newBackupEnv(t *testing.T, spec string) *backupEnv {
	w := &backupEnv{schedules: store.NewMemory[*backupSchedule](), backups: store.NewMemory[*backup]()}
	_, err := w.schedules.Create(context.Background(), "schedules/nightly", &backupSchedule{Spec: spec, Keep: 100})
	require.NoError(t, err)
	return w
}

// start runs the scheduler's controller and the backups' until stop.
func (w *backupEnv) start(t *testing.T) (*reconcile.Controller[*backupSchedule], func()) {
	var sc *reconcile.Controller[*backupSchedule]
	src, err := schedule.NewSource(func(context.Context) ([]schedule.Entry, error) {
		var out []schedule.Entry
		for _, obj := range sc.Lister().List() {
			if s, err := schedule.Parse(obj.Value.Spec, nil); err == nil {
				out = append(out, schedule.Entry{Key: obj.Key, Schedule: s})
			}
		}
		return out, nil
	}, schedule.Options{Name: "backup schedules"})
	require.NoError(t, err)
	parentOf := func(old, cur *store.Object[*backup]) []string {
		obj := cmpOr(cur, old)
		name, _, _ := strings.Cut(strings.TrimPrefix(obj.Key, "backups/"), "/")
		return []string{"schedules/" + name}
	}
	sc, err = reconcile.New(w.schedules, &scheduler{backups: w.backups}, reconcile.Options[*backupSchedule]{
		Name: "schedules", Prefix: "schedules/",
		Sources: []reconcile.Source{src, reconcile.FromStore(w.backups, "backups/", parentOf)},
	})
	require.NoError(t, err)
	bc, err := reconcile.New(w.backups, reconcile.ReconcilerFunc[*backup](w.runBackup), reconcile.Options[*backup]{Name: "backups"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- sc.Run(ctx) }()
	go func() { done <- bc.Run(ctx) }()
	require.NoError(t, sc.WaitForSync(ctx))
	require.NoError(t, bc.WaitForSync(ctx))
	return sc, func() {
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, <-done)
	}
}

func cmpOr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

// runBackup is the backup controller: it finishes a backup unless held,
// and records the most backups it has seen running at once.
func (w *backupEnv) runBackup(ctx context.Context, req reconcile.Request[*backup]) (reconcile.Result, error) {
	objs, _, err := w.backups.List(ctx, "backups/")
	if err != nil {
		return reconcile.Result{}, err
	}
	var busy int64
	for _, o := range objs {
		if !o.Value.Done {
			busy++
		}
	}
	w.maxBusy.Store(max(w.maxBusy.Load(), busy))
	if req.Deleted || req.Object.Value.Done {
		return reconcile.Result{}, nil
	}
	if w.hold.Load() {
		return reconcile.Result{RequeueAfter: time.Minute}, nil
	}
	_, err = req.Store.Update(ctx, req.Key, &backup{Done: true, OK: true}, req.Object.Revision)
	return reconcile.Result{}, err
}

// slotsOf returns the slots of the backups made, as minutes past the
// bubble's start.
func (w *backupEnv) slotsOf(t *testing.T) []int {
	objs, _, err := w.backups.List(context.Background(), "backups/nightly/")
	require.NoError(t, err)
	var out []int
	for _, o := range objs {
		slot, ok := schedule.SlotOf("backups/nightly/", o.Key)
		require.True(t, ok, o.Key)
		out = append(out, int(slot.Sub(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).Minutes()))
	}
	return out
}

func minutes(from, to, step int) []int {
	var out []int
	for m := from; m <= to; m += step {
		out = append(out, m)
	}
	return out
}

// A new schedule runs at once (nothing has run), then once at each of
// ten slots: eleven backups, each under its own slot's key.
func TestWithAControllerEachSlotMakesOneBackupUnderItsSlotsKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newBackupEnv(t, "*/5 * * * *")
		_, stop := w.start(t)
		advance(50*time.Minute + time.Second)
		synctest.Wait()
		require.Equal(t, minutes(0, 50, 5), w.slotsOf(t))
		stop()
	})
}

func TestKeysWokenAtASlotShowTheSourcesNameInTheirTriggers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[string]()
		_, err := s.Create(context.Background(), "reports/daily", "@daily")
		require.NoError(t, err)
		src, err := schedule.NewSource(func(context.Context) ([]schedule.Entry, error) {
			return []schedule.Entry{{Key: "reports/daily", Schedule: mustParse(t, "@hourly")}}, nil
		}, schedule.Options{Name: "report schedules"})
		require.NoError(t, err)
		nop := reconcile.ReconcilerFunc[string](func(context.Context, reconcile.Request[string]) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		})
		c, err := reconcile.New(s, nop, reconcile.Options[string]{Name: "reports", Sources: []reconcile.Source{src}})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- c.Run(ctx) }()
		advance(time.Hour + time.Second)
		synctest.Wait()
		snap := c.Snapshot()
		require.Len(t, snap, 1)
		require.Equal(t, []string{"source report schedules"}, snap[0].LastTriggers)
		cancel()
		require.NoError(t, <-done)
	})
}

func mustParse(t *testing.T, spec string) schedule.Schedule {
	s, err := schedule.Parse(spec, nil)
	require.NoError(t, err)
	return s
}

func TestWithAControllerDowntimeOverFiveSlotsMakesOneCatchUpTheLatest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newBackupEnv(t, "*/5 * * * *")
		_, stop := w.start(t)
		advance(10*time.Minute + time.Second)
		synctest.Wait()
		stop()
		require.Equal(t, []int{0, 5, 10}, w.slotsOf(t))
		advance(27 * time.Minute) // 00:15 to 00:35 missed
		_, stop = w.start(t)
		synctest.Wait()
		require.Equal(t, []int{0, 5, 10, 35}, w.slotsOf(t), "one catch-up, the latest")
		advance(5 * time.Minute)
		synctest.Wait()
		require.Equal(t, []int{0, 5, 10, 35, 40}, w.slotsOf(t))
		stop()
	})
}

func TestWithAControllerAtMostOneBackupRunsAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newBackupEnv(t, "*/5 * * * *")
		w.hold.Store(true)
		_, stop := w.start(t)
		advance(22 * time.Minute) // four slots while the first backup runs
		synctest.Wait()
		require.Equal(t, []int{0}, w.slotsOf(t))
		w.hold.Store(false) // it finishes at its next try, and wakes its schedule
		advance(time.Minute)
		synctest.Wait()
		require.Equal(t, []int{0, 20}, w.slotsOf(t), "then the latest slot, once")
		require.Equal(t, int64(1), w.maxBusy.Load())
		stop()
	})
}

func advance(d time.Duration) { <-time.After(d) }
