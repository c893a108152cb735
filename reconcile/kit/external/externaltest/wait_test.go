package externaltest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

type (
	spec   = externaltest.SuiteSpec
	status = externaltest.SuiteStatus
	res    = externaltest.SuiteResource
)

// memory returns an in-memory store with the API-server layer, closed at
// t's cleanup; in a synctest bubble, make it inside the bubble.
func memory(t testing.TB) store.Store[*res] {
	m := store.NewMemory[*res]()
	t.Cleanup(func() { _ = m.Close() })
	s, err := apistore.New(m, resource.Kind[spec, status]{})
	require.NoError(t, err)
	return s
}

// served returns a client of a store server (externaltest.Serve).
func served(t testing.TB) store.Store[*res] { return externaltest.Serve[spec, status](t) }

// backends are the stores the helpers are tested over: the tests that
// move a fake clock run on memory alone, since a bubble's clock stands
// still while a goroutine waits on a socket.
var backends = map[string]func(testing.TB) store.Store[*res]{"memory": memory, "http": served}

// fakeT is a testing.TB whose Fatalf records the failure and ends the
// goroutine, as testing's does, and whose context the test controls.
type fakeT struct {
	testing.TB
	ctx    context.Context
	mu     sync.Mutex
	failed string
}

func (f *fakeT) Helper()                  {}
func (f *fakeT) Context() context.Context { return f.ctx }
func (f *fakeT) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.failed = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

// failure runs call with a fakeT of t and ctx, as a test of its own, and
// returns what it failed with, "" if it did not.
func failure(t testing.TB, ctx context.Context, call func(t testing.TB)) string {
	f := &fakeT{TB: t, ctx: ctx}
	done := make(chan struct{})
	go func() {
		defer close(done)
		call(f)
	}()
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

// writeReady writes the Ready condition of key, as an operator would, at
// the generation it reads; it retries a write that loses a race.
func writeReady(t testing.TB, s store.Store[*res], key string, st resource.ConditionStatus, reason, message string) {
	for {
		obj, err := s.Get(context.Background(), key)
		require.NoError(t, err)
		c := resource.Condition{Type: resource.ConditionReady, Status: st, Reason: reason, Message: message}
		_, err = resource.WriteStatus(context.Background(), s, obj, status{}, c)
		if !errors.Is(err, store.ErrConflict) {
			require.NoError(t, err)
			return
		}
	}
}

func put(t testing.TB, s store.Store[*res], key string, size int) {
	_, err := resource.PutSpec(context.Background(), s, key, spec{Size: size})
	require.NoError(t, err)
}

// watching is a store that says when its first watch has started: the
// waits have listed by then.
type watching struct {
	store.Store[*res]
	once    sync.Once
	started chan struct{}
}

func newWatching(s store.Store[*res]) *watching {
	return &watching{Store: s, started: make(chan struct{})}
}

func (w *watching) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[*res], error) {
	defer w.once.Do(func() { close(w.started) })
	return w.Store.Watch(ctx, prefix, after)
}

func TestConvergedMeansReadyTrueForTheLatestGeneration(t *testing.T) {
	ready := resource.Condition{Type: resource.ConditionReady, Status: resource.ConditionTrue}
	r := func(gen, observed int64, conds ...resource.Condition) *res {
		v := &res{ObservedGeneration: observed, Conditions: conds}
		v.Generation = gen
		return v
	}
	notReady := ready
	notReady.Status = resource.ConditionFalse
	other := ready
	other.Type = "Synced"
	for _, c := range []struct {
		name string
		r    *res
		want bool
	}{
		{"nil", nil, false},
		{"no conditions", r(1, 1), false},
		{"Ready True for its generation", r(2, 2, other, ready), true},
		{"Ready True for an earlier generation", r(2, 1, ready), false},
		{"Ready False", r(1, 1, notReady), false},
		{"another condition True", r(1, 1, other), false},
	} {
		require.Equal(t, c.want, externaltest.Converged(c.r), c.name)
	}
}

// A wait wakes at the write that makes it hold, at a fake instant no
// poll would fall on, and not at an earlier Ready of an older
// generation.
func TestWaitConvergedReturnsAtTheStatusWriteThatMakesEveryKeyReady(t *testing.T) {
	const at = 7*time.Second + 3*time.Millisecond + 1
	synctest.Test(t, func(t *testing.T) {
		s := memory(t)
		put(t, s, "vms/a", 1)
		writeReady(t, s, "vms/a", resource.ConditionTrue, "Converged", "")
		put(t, s, "vms/a", 2) // generation 2: the Ready above is of generation 1
		put(t, s, "vms/b", 1)
		start := time.Now()
		go func() {
			time.Sleep(at / 2)
			writeReady(t, s, "vms/b", resource.ConditionTrue, "Converged", "")
			time.Sleep(at - at/2)
			writeReady(t, s, "vms/a", resource.ConditionTrue, "Converged", "")
		}()
		externaltest.WaitConverged(t, s, time.Minute, "vms/a", "vms/b")
		require.Equal(t, at, time.Since(start))
	})
	t.Run("http", func(t *testing.T) {
		s := served(t)
		put(t, s, "vms/a", 1)
		put(t, s, "vms/b", 1)
		go func() {
			writeReady(t, s, "vms/b", resource.ConditionTrue, "Converged", "")
			writeReady(t, s, "vms/a", resource.ConditionTrue, "Converged", "")
		}()
		externaltest.WaitConverged(t, s, time.Minute, "vms/a", "vms/b")
		for _, k := range []string{"vms/a", "vms/b"} {
			obj, err := s.Get(t.Context(), k)
			require.NoError(t, err)
			require.True(t, externaltest.Converged(obj.Value), k)
		}
	})
}

func TestWaitConvergedNamesTheReasonOfAKeyThatDidNotConverge(t *testing.T) {
	prepare := func(t testing.TB, s store.Store[*res]) {
		put(t, s, "vms/a", 1)
		writeReady(t, s, "vms/a", resource.ConditionFalse, "DependencyDown", "postgres is down")
		put(t, s, "vms/b", 1)
		writeReady(t, s, "vms/b", resource.ConditionTrue, "Converged", "")
	}
	check := func(t *testing.T, msg string) {
		require.Contains(t, msg, `"vms/a": generation 1, observed 1; Ready False (DependencyDown): postgres is down`)
		require.Contains(t, msg, `"vms/c": absent`)
		require.NotContains(t, msg, `"vms/b"`)
	}
	t.Run("memory, at its limit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := memory(t)
			prepare(t, s)
			start := time.Now()
			msg := failure(t, t.Context(), func(tb testing.TB) {
				externaltest.WaitConverged(tb, s, time.Minute, "vms/a", "vms/b", "vms/c")
			})
			require.Equal(t, time.Minute, time.Since(start))
			check(t, msg)
		})
	})
	t.Run("http, when its context ends", func(t *testing.T) {
		s := served(t)
		prepare(t, s) // through s: a wrapper hides its status writes
		w := newWatching(s)
		ctx, cancel := context.WithCancel(t.Context())
		go func() { <-w.started; cancel() }()
		msg := failure(t, ctx, func(tb testing.TB) {
			externaltest.WaitConverged(tb, w, time.Hour, "vms/a", "vms/b", "vms/c")
		})
		check(t, msg)
		require.Contains(t, msg, "context canceled")
	})
}

func TestWaitForIsCheckedAgainAtEachChangeUnderItsPrefix(t *testing.T) {
	three := func(objs map[string]store.Object[*res]) bool { return len(objs) == 3 }
	synctest.Test(t, func(t *testing.T) {
		s := memory(t)
		put(t, s, "other/x", 1) // outside the prefix
		start := time.Now()
		go func() {
			for i := range 3 {
				time.Sleep(time.Second)
				put(t, s, fmt.Sprintf("vms/%d", i), 1)
			}
		}()
		objs := externaltest.WaitFor(t, s, "vms/", time.Minute, "three vms", three)
		require.Equal(t, 3*time.Second, time.Since(start))
		require.Contains(t, objs, "vms/2")
	})
	t.Run("http", func(t *testing.T) {
		s := served(t)
		go func() {
			for i := range 3 {
				put(t, s, fmt.Sprintf("vms/%d", i), 1)
			}
		}()
		objs := externaltest.WaitFor(t, s, "vms/", time.Minute, "three vms", three)
		require.Len(t, objs, 3)
	})
}

// failingWatch is a store whose watches fail n times before they start.
type failingWatch struct {
	store.Store[*res]
	mu sync.Mutex
	n  int
}

func (f *failingWatch) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[*res], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n > 0 {
		f.n--
		return nil, fmt.Errorf("%w: the server restarts", store.ErrUnavailable)
	}
	return f.Store.Watch(ctx, prefix, after)
}

func TestWaitForListsAgainWhenItsWatchFailsAndNamesTheStoresError(t *testing.T) {
	one := func(objs map[string]store.Object[*res]) bool { return len(objs) == 1 }
	synctest.Test(t, func(t *testing.T) {
		s := &failingWatch{Store: memory(t), n: 3}
		go func() {
			time.Sleep(time.Second)
			put(t, s, "vms/a", 1)
		}()
		externaltest.WaitFor(t, s, "vms/", time.Minute, "one vm", one)
	})
	synctest.Test(t, func(t *testing.T) {
		s := &failingWatch{Store: memory(t), n: 1 << 30}
		msg := failure(t, t.Context(), func(tb testing.TB) {
			externaltest.WaitFor(tb, s, "vms/", time.Minute, "one vm", one)
		})
		require.Contains(t, msg, "waiting for one vm")
		require.Contains(t, msg, "the server restarts")
	})
}

// racing is a store whose first Get is followed, before its answer, by
// an operator's status write: a delete at the revision it returns loses.
type racing struct {
	store.Store[*res]
	t    testing.TB
	gets int
}

func (r *racing) Get(ctx context.Context, key string) (store.Object[*res], error) {
	obj, err := r.Store.Get(ctx, key)
	r.gets++
	if r.gets == 1 {
		writeReady(r.t, r.Store, key, resource.ConditionTrue, "Converged", "")
	}
	return obj, err
}

func TestDeleteIsMadeAgainAtTheNewerRevisionWhenAStatusWriteWinsTheRace(t *testing.T) {
	for name, newStore := range backends {
		t.Run(name, func(t *testing.T) {
			inner := newStore(t)
			put(t, inner, "vms/a", 1)
			s := &racing{Store: inner, t: t}
			rev := externaltest.Delete(t, s, "vms/a")
			require.Equal(t, 2, s.gets, "the delete was not made again")
			require.Positive(t, rev)
			_, err := inner.Get(t.Context(), "vms/a")
			require.ErrorIs(t, err, store.ErrNotFound)
		})
	}
}

func TestDeleteOfAnAbsentKeyFailsTheTest(t *testing.T) {
	for name, newStore := range backends {
		t.Run(name, func(t *testing.T) {
			s := newStore(t)
			msg := failure(t, t.Context(), func(tb testing.TB) { externaltest.Delete(tb, s, "vms/none") })
			require.Contains(t, msg, `delete "vms/none"`)
			require.Contains(t, msg, "not found")
		})
	}
}

// withFinalizer creates key holding a finalizer, as an operator's
// Finalize adds one.
func withFinalizer(t testing.TB, s store.Store[*res], key string) {
	v := &res{Spec: spec{Size: 1}}
	v.Finalizers = []string{"vmop/cleanup"}
	_, err := s.Create(context.Background(), key, v)
	require.NoError(t, err)
}

// release removes key's finalizers: the layer deletes the marked object.
func release(t testing.TB, s store.Store[*res], key string) {
	obj, err := s.Get(context.Background(), key)
	require.NoError(t, err)
	v := *obj.Value
	v.Finalizers = nil
	_, err = s.Update(context.Background(), key, &v, obj.Revision)
	require.NoError(t, err)
}

func TestWaitGoneNamesWhatHoldsAKeyAndReturnsOnceItIsGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memory(t)
		withFinalizer(t, s, "vms/a")
		put(t, s, "vms/b", 1)
		externaltest.Delete(t, s, "vms/a")
		externaltest.Delete(t, s, "vms/b")
		msg := failure(t, t.Context(), func(tb testing.TB) { externaltest.WaitGone(tb, s, time.Minute, "vms/a", "vms/b") })
		require.Contains(t, msg, `"vms/a" at revision`)
		require.Contains(t, msg, `"finalizers":["vmop/cleanup"]`)
		require.NotContains(t, msg, `"vms/b"`)
		start := time.Now()
		go func() {
			time.Sleep(time.Second)
			release(t, s, "vms/a")
		}()
		externaltest.WaitGone(t, s, time.Minute, "vms/a", "vms/b")
		require.Equal(t, time.Second, time.Since(start))
	})
	t.Run("http", func(t *testing.T) {
		w := newWatching(served(t))
		withFinalizer(t, w, "vms/a")
		externaltest.Delete(t, w, "vms/a")
		go func() { <-w.started; release(t, w, "vms/a") }()
		externaltest.WaitGone(t, w, time.Minute, "vms/a")
		_, err := w.Get(t.Context(), "vms/a")
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

// "é" and "è" share their first byte: the keys' common prefix is cut
// back to a whole character, which a store accepts as a prefix.
func TestAWaitOverKeysThatShareHalfACharacterWatchesTheirWholeCommonPrefix(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memory(t)
		put(t, s, "vms/é", 1)
		put(t, s, "vms/è", 1)
		writeReady(t, s, "vms/é", resource.ConditionTrue, "Converged", "")
		writeReady(t, s, "vms/è", resource.ConditionTrue, "Converged", "")
		start := time.Now()
		externaltest.WaitConverged(t, s, time.Minute, "vms/é", "vms/è")
		require.Zero(t, time.Since(start))
	})
}
