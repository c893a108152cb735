package drift_test

import (
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/drift"
	"github.com/converge-go/converge/store"
)

var _ reconcile.Source = (*drift.Source)(nil)

// world is the fake world a source polls: objects by key, each with its
// fingerprint, changed by the test.
type world struct {
	mu    sync.Mutex
	objs  map[string]string
	err   error // the error the next polls return, if set
	polls int
}

func newWorld(objs map[string]string) *world {
	w := &world{objs: map[string]string{}}
	maps.Copy(w.objs, objs)
	return w
}

func (w *world) set(key, fp string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.objs[key] = fp
}

func (w *world) remove(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.objs, key)
}

func (w *world) get(key string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fp, ok := w.objs[key]
	return fp, ok
}

func (w *world) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
}

func (w *world) list(context.Context) ([]drift.Observed, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.polls++
	if w.err != nil {
		return nil, w.err
	}
	var out []drift.Observed
	for _, key := range slices.Sorted(maps.Keys(w.objs)) {
		out = append(out, drift.Observed{Key: key, Fingerprint: w.objs[key]})
	}
	return out, nil
}

// woken records the keys a source woke, in order.
type woken struct {
	mu   sync.Mutex
	keys []string
}

func (k *woken) enqueue(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys = append(k.keys, key)
}

// take returns the keys woken since the last take.
func (k *woken) take() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := k.keys
	k.keys = nil
	return out
}

// run starts src in the bubble; stop ends it and returns what Start
// returned.
func run(src *drift.Source, k *woken) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Start(ctx, k.enqueue) }()
	return func() error {
		cancel()
		return <-done
	}
}

func advance(d time.Duration) { <-time.After(d) }

func newSource(t *testing.T, list drift.ListFunc, opts drift.Options) *drift.Source {
	t.Helper()
	src, err := drift.New(list, opts)
	require.NoError(t, err)
	return src
}

// poll lets one Interval pass, and a second for the wake-ups.
func poll() {
	advance(time.Minute + time.Second)
	synctest.Wait()
}

var roles = map[string]string{"roles/alice": "login", "roles/bob": "login", "roles/carol": "nologin"}

func TestTheFirstPollLearnsTheBaselineAndWakesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, k := newWorld(roles), &woken{}
		stop := run(newSource(t, w.list, drift.Options{}), k)
		synctest.Wait()
		require.Equal(t, 1, w.polls)
		require.Empty(t, k.take())
		require.NoError(t, stop())
	})
}

func TestWakeOnFirstPollWakesEveryListedKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, k := newWorld(roles), &woken{}
		stop := run(newSource(t, w.list, drift.Options{WakeOnFirstPoll: true}), k)
		synctest.Wait()
		require.Equal(t, []string{"roles/alice", "roles/bob", "roles/carol"}, k.take())
		poll()
		require.Empty(t, k.take(), "then only drift")
		require.NoError(t, stop())
	})
}

func TestUnchangedObjectsWakeNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, k := newWorld(roles), &woken{}
		stop := run(newSource(t, w.list, drift.Options{}), k)
		for range 5 {
			poll()
		}
		require.Equal(t, 6, w.polls)
		require.Empty(t, k.take())
		require.NoError(t, stop())
	})
}

func TestAChangedFingerprintWakesExactlyItsKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, k := newWorld(roles), &woken{}
		stop := run(newSource(t, w.list, drift.Options{}), k)
		synctest.Wait()
		w.set("roles/bob", "login,superuser")
		poll()
		require.Equal(t, []string{"roles/bob"}, k.take())
		poll()
		require.Empty(t, k.take(), "the change is the new baseline")
		require.NoError(t, stop())
	})
}

func TestAnAppearedObjectWakesExactlyItsKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, k := newWorld(roles), &woken{}
		stop := run(newSource(t, w.list, drift.Options{}), k)
		synctest.Wait()
		w.set("roles/mallory", "login,superuser")
		poll()
		require.Equal(t, []string{"roles/mallory"}, k.take())
		require.NoError(t, stop())
	})
}

func TestAVanishedObjectWakesExactlyItsKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, k := newWorld(roles), &woken{}
		stop := run(newSource(t, w.list, drift.Options{}), k)
		synctest.Wait()
		w.remove("roles/alice")
		poll()
		require.Equal(t, []string{"roles/alice"}, k.take())
		require.NoError(t, stop())
	})
}

// Objects sharing a key wake it when any of them changes, appears or
// vanishes, and not when only their listing order changes.
func TestAKeySharedByObjectsWakesWhenAnyChangesWhateverTheOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		listing := []drift.Observed{{"dbs/app", "owner=app"}, {"dbs/app", "grant=ro"}, {"dbs/other", "owner=x"}}
		list := func(context.Context) ([]drift.Observed, error) {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(listing), nil
		}
		change := func(f func()) {
			mu.Lock()
			defer mu.Unlock()
			f()
		}
		k := &woken{}
		stop := run(newSource(t, list, drift.Options{}), k)
		synctest.Wait()
		change(func() { slices.Reverse(listing) })
		poll()
		require.Empty(t, k.take(), "the same objects in another order")
		change(func() { listing[1].Fingerprint = "grant=rw" }) // dbs/app's grant
		poll()
		require.Equal(t, []string{"dbs/app"}, k.take())
		change(func() { listing = append(listing, drift.Observed{"dbs/app", "grant=admin"}) })
		poll()
		require.Equal(t, []string{"dbs/app"}, k.take())
		change(func() { listing = listing[:len(listing)-1] }) // the admin grant goes
		poll()
		require.Equal(t, []string{"dbs/app"}, k.take())
		require.NoError(t, stop())
	})
}

// 50 keys drift at once with 5 wake-ups a second: 5 now, then 5 a
// second, in order, each once, while polls go on.
func TestTheRateLimitSpreadsABurstWithoutLosingAKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, k := newWorld(nil), &woken{}
		var keys []string
		for i := range 50 {
			keys = append(keys, string(rune('a'+i/26))+string(rune('a'+i%26)))
			w.set(keys[i], "v1")
		}
		stop := run(newSource(t, w.list, drift.Options{Interval: 4 * time.Second, PerSecond: 5, Burst: 5}), k)
		synctest.Wait()
		for _, key := range keys {
			w.set(key, "v2")
		}
		advance(4 * time.Second) // the poll that finds them
		synctest.Wait()
		var got []string
		for range 10 {
			batch := k.take()
			require.LessOrEqual(t, len(batch), 5, "at most Burst, then PerSecond a second")
			got = append(got, batch...)
			advance(time.Second)
			synctest.Wait()
		}
		got = append(got, k.take()...)
		require.Equal(t, keys, got, "every key once, in the order found")
		require.Greater(t, w.polls, 3, "polls went on meanwhile")
		w.set(keys[0], "v3")
		advance(4 * time.Second)
		synctest.Wait()
		require.Equal(t, keys[:1], k.take(), "and later drift is found as ever")
		require.NoError(t, stop())
	})
}

// A key found drifted again while it waits for the rate limit is woken
// once.
func TestAKeyFoundAgainBeforeItWasWokenIsWokenOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, k := newWorld(map[string]string{"a": "1", "b": "1", "c": "1"}), &woken{}
		stop := run(newSource(t, w.list, drift.Options{Interval: time.Second, PerSecond: 0.1, Burst: 1}), k)
		synctest.Wait()
		for _, key := range []string{"a", "b", "c"} {
			w.set(key, "2")
		}
		advance(time.Second + time.Millisecond)
		synctest.Wait()
		w.set("c", "3") // found again at the next poll, still waiting
		advance(30 * time.Second)
		synctest.Wait()
		require.Equal(t, []string{"a", "b", "c"}, k.take())
		require.NoError(t, stop())
	})
}

func TestAFailingListerWakesNothingAndKeepsTheBaseline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, k := newWorld(roles), &woken{}
		src := newSource(t, w.list, drift.Options{Name: "postgres roles"})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- src.Start(ctx, k.enqueue) }()
		synctest.Wait()
		w.set("roles/bob", "login,superuser") // drift before the failure
		refused := errors.New("connection refused")
		w.fail(refused)
		err := <-done
		require.ErrorIs(t, err, refused)
		require.ErrorContains(t, err, `drift source "postgres roles": list: connection refused`)
		require.ErrorIs(t, src.Err(), refused)
		require.Empty(t, k.take(), "a failed poll wakes nothing, let alone everything")

		w.fail(nil)
		stop := run(src, k) // as the controller restarts it
		synctest.Wait()
		require.Equal(t, []string{"roles/bob"}, k.take(), "compared with the baseline: the drift, and nothing else")
		require.NoError(t, src.Err())
		require.NoError(t, stop())
	})
}

func TestNewRefusesOptionsOutOfRangeWithErrInvalid(t *testing.T) {
	list := func(context.Context) ([]drift.Observed, error) { return nil, nil }
	_, err := drift.New(nil, drift.Options{})
	require.ErrorIs(t, err, store.ErrInvalid)
	for _, opts := range []drift.Options{
		{Interval: -time.Second},
		{Jitter: -0.1}, {Jitter: 1.5}, {Jitter: math.NaN()},
		{PerSecond: -1}, {PerSecond: math.NaN()},
		{Burst: -1},
	} {
		_, err := drift.New(list, opts)
		require.ErrorIs(t, err, drift.ErrInvalid, "%+v", opts)
		require.ErrorIs(t, err, store.ErrInvalid)
	}
	src, err := drift.New(list, drift.Options{PerSecond: math.Inf(1)})
	require.NoError(t, err)
	require.Equal(t, "drift", src.Name())
	require.NoError(t, src.Err())
	var zero drift.Source
	require.ErrorIs(t, zero.Start(context.Background(), func(string) {}), drift.ErrInvalid, "the zero Source refuses to start")
}

func TestASecondStartWhileOneRunsIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(roles)
		src := newSource(t, w.list, drift.Options{})
		stop := run(src, &woken{})
		synctest.Wait()
		err := src.Start(context.Background(), func(string) {})
		require.ErrorIs(t, err, drift.ErrAlreadyRunning)
		require.ErrorContains(t, err, "already running")
		require.NoError(t, stop(), "Start returns nil when its context ends")
	})
}

// With Jitter 0.5, each wait between polls lasts from one Interval to one
// and a half.
func TestJitterLengthensEachIntervalWithinItsBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var at []time.Time
		list := func(context.Context) ([]drift.Observed, error) {
			mu.Lock()
			defer mu.Unlock()
			at = append(at, time.Now())
			return nil, nil
		}
		stop := run(newSource(t, list, drift.Options{Interval: 10 * time.Second, Jitter: 0.5}), &woken{})
		advance(10 * time.Minute)
		require.NoError(t, stop())
		mu.Lock()
		defer mu.Unlock()
		require.Greater(t, len(at), 10*60/15)
		for i := 1; i < len(at); i++ {
			gap := at[i].Sub(at[i-1])
			require.GreaterOrEqual(t, gap, 10*time.Second)
			require.LessOrEqual(t, gap, 15*time.Second)
		}
	})
}

func TestFingerprintTellsFieldsApart(t *testing.T) {
	require.Equal(t, drift.Fingerprint("login", "super"), drift.Fingerprint("login", "super"))
	require.NotEqual(t, drift.Fingerprint("ab", "c"), drift.Fingerprint("a", "bc"))
	require.NotEqual(t, drift.Fingerprint("a"), drift.Fingerprint("a", ""))
	require.NotEqual(t, drift.Fingerprint(), drift.Fingerprint(""))
	require.Len(t, drift.Fingerprint("x"), 32)
}
