package schedule

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
)

// wakes records what a Source woke, and when.
type wakes struct {
	mu  sync.Mutex
	got []wake
}

type wake struct {
	key string
	at  time.Time
}

func (w *wakes) enqueue(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, wake{key, time.Now()})
}

func (w *wakes) of(key string) []time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []time.Time
	for _, x := range w.got {
		if x.key == key {
			out = append(out, x.at)
		}
	}
	return out
}

// entries is a list the test changes.
type entries struct {
	mu   sync.Mutex
	list []Entry
	err  error
}

func (e *entries) set(list []Entry, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list, e.err = list, err
}

func (e *entries) get(context.Context) ([]Entry, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.list, e.err
}

// run starts src in the bubble and returns a function that stops it and
// returns what Start returned.
func run(src *Source, w *wakes) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Start(ctx, w.enqueue) }()
	return func() error {
		cancel()
		return <-done
	}
}

func advance(d time.Duration) { <-time.After(d) }

func newSource(t *testing.T, list ListFunc, opts Options) *Source {
	t.Helper()
	src, err := NewSource(list, opts)
	require.NoError(t, err)
	return src
}

func TestTenSlotsWakeTheKeyTenTimesAtItsSlotsWithTenDistinctChildKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now() // 2000-01-01 00:00 UTC in the bubble
		s := mustParse(t, "*/5 * * * *", nil)
		e := &entries{list: []Entry{{Key: "schedules/nightly", Schedule: s}}}
		w := &wakes{}
		stop := run(newSource(t, e.get, Options{}), w)
		advance(50*time.Minute + time.Second)
		synctest.Wait()
		require.NoError(t, stop())
		got := w.of("schedules/nightly")
		require.Len(t, got, 10)
		children := map[string]bool{}
		for i, at := range got {
			require.Equal(t, start.Add(time.Duration(i+1)*5*time.Minute), at, "woken at its slot")
			children[SlotKey("backups/nightly/", s.Prev(at))] = true
		}
		require.Len(t, children, 10)
	})
}

func TestEachKeyIsWokenAtItsOwnSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &entries{list: []Entry{
			{Key: "a", Schedule: mustParse(t, "*/10 * * * *", nil)},
			{Key: "b", Schedule: mustParse(t, "@hourly", nil)},
			{Key: "never"}, // the zero Schedule
		}}
		w := &wakes{}
		stop := run(newSource(t, e.get, Options{Interval: time.Hour}), w)
		advance(2*time.Hour + time.Second)
		synctest.Wait()
		require.NoError(t, stop())
		require.Len(t, w.of("a"), 12)
		require.Len(t, w.of("b"), 2)
		require.Empty(t, w.of("never"))
	})
}

// Slots that pass while the source is stopped wake their key once when
// it starts again (Due then picks the latest to catch up on).
func TestSlotsMissedWhileStoppedWakeTheirKeyOnceAtTheNextStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &entries{list: []Entry{{Key: "a", Schedule: mustParse(t, "*/5 * * * *", nil)}}}
		w := &wakes{}
		src := newSource(t, e.get, Options{})
		stop := run(src, w)
		advance(5*time.Minute + time.Second)
		synctest.Wait()
		require.NoError(t, stop())
		require.Len(t, w.of("a"), 1)
		advance(time.Hour) // twelve slots while stopped
		stop = run(src, w)
		synctest.Wait()
		require.Len(t, w.of("a"), 2, "one wake-up for the twelve")
		advance(5 * time.Minute)
		synctest.Wait()
		require.Len(t, w.of("a"), 3, "then each slot again")
		require.NoError(t, stop())
	})
}

func TestAFailingListIsReturnedAndTheSlotsSinceAreWokenAtTheRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &entries{list: []Entry{{Key: "a", Schedule: mustParse(t, "*/5 * * * *", nil)}}}
		w := &wakes{}
		src := newSource(t, e.get, Options{Name: "backup schedules"})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- src.Start(ctx, w.enqueue) }()
		synctest.Wait()
		boom := errors.New("cache not ready")
		e.set(e.list, boom)
		err := <-done // at the next look, a minute later
		require.ErrorIs(t, err, boom)
		require.ErrorContains(t, err, `schedule source "backup schedules"`)
		require.Empty(t, w.of("a"))
		advance(10 * time.Minute)
		e.set(e.list, nil)
		stop := run(src, w)
		synctest.Wait()
		require.Len(t, w.of("a"), 1, "the slots during the failure, once")
		require.NoError(t, stop())
	})
}

func TestAScheduleChangedIsFollowedWithinAnInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &entries{list: []Entry{{Key: "a", Schedule: mustParse(t, "@daily", nil)}}}
		w := &wakes{}
		stop := run(newSource(t, e.get, Options{Interval: time.Minute}), w)
		advance(30 * time.Second)
		e.set([]Entry{{Key: "a", Schedule: mustParse(t, "*/2 * * * *", nil)}}, nil)
		advance(10*time.Minute + time.Second)
		synctest.Wait()
		require.NoError(t, stop())
		require.Len(t, w.of("a"), 5, "00:02 to 00:10")
	})
}

func TestNewSourceRefusesBadInputWithErrInvalid(t *testing.T) {
	_, err := NewSource(nil, Options{})
	require.ErrorIs(t, err, store.ErrInvalid)
	_, err = NewSource(func(context.Context) ([]Entry, error) { return nil, nil }, Options{Interval: -time.Second})
	require.ErrorIs(t, err, ErrInvalid)
	src, err := NewSource(func(context.Context) ([]Entry, error) { return nil, nil }, Options{})
	require.NoError(t, err)
	require.Equal(t, "schedule", src.Name())
	var zero Source
	require.ErrorIs(t, zero.Start(context.Background(), func(string) {}), ErrInvalid, "the zero Source refuses to start")
}

func TestASecondStartWhileOneRunsIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t, (&entries{}).get, Options{})
		stop := run(src, &wakes{})
		synctest.Wait()
		err := src.Start(context.Background(), func(string) {})
		require.ErrorIs(t, err, ErrAlreadyRunning)
		require.ErrorContains(t, err, "already running")
		require.NoError(t, stop(), "Start returns nil when its context ends")
	})
}
