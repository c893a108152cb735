package owners_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/owners"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/faultstore"
)

type podSpec struct{ Image string }

type podStatus struct{ Running bool }

type pod = resource.Resource[podSpec, podStatus]

// holdFinalizer is a cleanup of the test's own: an object carrying it stays
// marked when deleted until the test removes it.
const holdFinalizer = "test/hold"

// world is a store with the API-server layer, over one backend, and the
// collectors a test runs over it. Tests act through the layer straight
// over the backend, as another program does; collectors reach the backend
// through a faultstore, whose faults and outages are theirs alone.
type world interface {
	// create makes key with finalizers and owners and returns its UID.
	create(t *testing.T, key string, finalizers []string, owners ...apistore.Owner) int64
	// ref names key's current object as an owner.
	ref(t *testing.T, key string, block bool) apistore.Owner
	// meta returns key's metadata, and whether key exists.
	meta(t *testing.T, key string) (apistore.Meta, bool)
	// remove deletes key with propagation p and reports whether it was
	// only marked; a conflict with a collector's write is tried again.
	remove(t *testing.T, key string, p apistore.Propagation) bool
	// removeIfThere is remove for a key that may be gone (it then reports
	// false).
	removeIfThere(t *testing.T, key string, p apistore.Propagation) bool
	// snapshot returns every object's UID and metadata, at one revision.
	snapshot(t *testing.T) map[string]snap
	// unhold removes holdFinalizer from key.
	unhold(t *testing.T, key string)
	// respec changes key's spec, keeping its metadata.
	respec(t *testing.T, key string, image string)
	// image returns key's spec.
	image(t *testing.T, key string) string
	// keys lists every key in the store, sorted.
	keys(t *testing.T) []string
	// deletions records the keys deleted from now on, in store order,
	// until the returned function is called.
	deletions(t *testing.T) func() []string
	// settle returns once the collectors have nothing left to do but wait
	// for a timer of a second or more (a backoff, a heartbeat): it lets the
	// fake clock move on by steps of settleStep until a step changes
	// nothing in the store.
	settle(t *testing.T)
	// start runs a new collector until the returned stop is called.
	start(t *testing.T, opts owners.CollectorOptions) *running
	faults() faults
	// holdWatches holds back (or lets go, in order) the events of the
	// collectors' watches: their cache lags behind the store, while their
	// calls and writes go through.
	holdWatches(held bool)
}

// snap is an object as a snapshot holds it.
type snap struct {
	uid  int64
	meta apistore.Meta
}

// faults are the controls of the faultstore in front of the collectors.
type faults interface {
	SetOutage(faultstore.Outage)
	SetPlan(faultstore.Plan)
}

// collector is what tests look at of an *owners.Collector[T].
type collector interface {
	Run(ctx context.Context) error
	Ready() error
	Health() reconcile.Health
	WaitForSync(ctx context.Context) error
}

// running is a collector being run.
type running struct {
	collector
	stop func()
}

// layered is a world over values of T.
type layered[T any] struct {
	direct *apistore.Store[T]
	// collected is the store the collectors are given: the layer over the
	// faultstore (whose watches lag when told), or a client of it served
	// over HTTP.
	collected store.Store[T]
	fault     *faultstore.Store[T]
	lag       *lagging[T]
	kind      apistore.Kind[T]
	value     func(image string) T
}

// backends are the worlds every collector test runs over: the in-memory
// store of Resources, which shares its values (checked for mutation); a
// View of a byte store holding JSON objects, which encodes them; and a
// store of JSON objects whose layer is served over HTTP, the collector a
// client of it.
var backends = []struct {
	name string
	new  func(t *testing.T) world
}{
	{"memory", func(t *testing.T) world {
		mem := store.NewMemory[*pod](store.WithMutationCheck(nil))
		t.Cleanup(func() { mem.Close() })
		return newLayered[*pod](t, mem, resource.Kind[podSpec, podStatus]{}, func(image string) *pod {
			return &pod{Spec: podSpec{Image: image}}
		})
	}},
	{"json-view", func(t *testing.T) world {
		raw := store.NewMemory[[]byte]()
		t.Cleanup(func() { raw.Close() })
		return newLayered[json.RawMessage](t, store.NewView[json.RawMessage](raw, nil), apistore.JSONKind{}, func(image string) json.RawMessage {
			return json.RawMessage(fmt.Sprintf(`{"spec":{"image":%q}}`, image))
		})
	}},
	{"http", func(t *testing.T) world {
		mem := store.NewMemory[json.RawMessage](store.WithMutationCheck(nil))
		t.Cleanup(func() { mem.Close() })
		w := newLayered[json.RawMessage](t, mem, apistore.JSONKind{}, func(image string) json.RawMessage {
			return json.RawMessage(fmt.Sprintf(`{"spec":{"image":%q}}`, image))
		})
		w.collected = served(t, w.collected)
		return w
	}},
}

// each runs body over every backend, each in its own synctest bubble.
func each(t *testing.T, body func(t *testing.T, w world)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { body(t, b.new(t)) })
		})
	}
}

func newLayered[T any](t *testing.T, inner store.Store[T], kind apistore.Kind[T], value func(string) T) *layered[T] {
	t.Helper()
	fault, err := faultstore.New(inner, faultstore.Options{})
	require.NoError(t, err)
	direct, err := apistore.New(inner, kind)
	require.NoError(t, err)
	lag := newLagging(fault)
	faulty, err := apistore.New[T](lag, kind)
	require.NoError(t, err)
	return &layered[T]{direct: direct, collected: faulty, fault: fault, lag: lag, kind: kind, value: value}
}

func (w *layered[T]) faults() faults { return w.fault }

func (w *layered[T]) holdWatches(held bool) { w.lag.hold(held) }

func (w *layered[T]) create(t *testing.T, key string, finalizers []string, refs ...apistore.Owner) int64 {
	t.Helper()
	v, err := w.kind.WithMeta(w.value("v1"), apistore.Meta{Finalizers: finalizers, Owners: refs})
	require.NoError(t, err)
	obj, err := w.direct.Create(t.Context(), key, v)
	require.NoError(t, err)
	return obj.CreateRevision
}

func (w *layered[T]) ref(t *testing.T, key string, block bool) apistore.Owner {
	t.Helper()
	obj, err := w.direct.Get(t.Context(), key)
	require.NoError(t, err)
	return apistore.Owner{Key: key, UID: obj.CreateRevision, Block: block}
}

func (w *layered[T]) meta(t *testing.T, key string) (apistore.Meta, bool) {
	t.Helper()
	obj, err := w.direct.Get(t.Context(), key)
	if errors.Is(err, store.ErrNotFound) {
		return apistore.Meta{}, false
	}
	require.NoError(t, err)
	m, err := w.kind.Meta(obj.Value)
	require.NoError(t, err)
	return m, true
}

func (w *layered[T]) remove(t *testing.T, key string, p apistore.Propagation) bool {
	t.Helper()
	_, err := w.direct.Get(t.Context(), key)
	require.NoError(t, err)
	return w.removeIfThere(t, key, p)
}

func (w *layered[T]) removeIfThere(t *testing.T, key string, p apistore.Propagation) bool {
	t.Helper()
	for range store.DefaultAttempts {
		obj, err := w.direct.Get(t.Context(), key)
		if errors.Is(err, store.ErrNotFound) {
			return false
		}
		require.NoError(t, err)
		_, marked, err := w.direct.DeleteWith(t.Context(), key, obj.Revision, p)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return false
		case !errors.Is(err, store.ErrConflict):
			require.NoError(t, err)
			return marked
		}
	}
	t.Fatalf("%s kept changing while the test deleted it", key)
	return false
}

func (w *layered[T]) snapshot(t *testing.T) map[string]snap {
	t.Helper()
	objs, _, err := w.direct.List(t.Context(), "")
	require.NoError(t, err)
	out := make(map[string]snap, len(objs))
	for _, obj := range objs {
		m, err := w.kind.Meta(obj.Value)
		require.NoError(t, err)
		out[obj.Key] = snap{uid: obj.CreateRevision, meta: m}
	}
	return out
}

func (w *layered[T]) unhold(t *testing.T, key string) {
	t.Helper()
	w.modify(t, key, func(v T, m apistore.Meta) (T, error) {
		m.Finalizers = slices.DeleteFunc(slices.Clone(m.Finalizers), func(f string) bool { return f == holdFinalizer })
		return w.kind.WithMeta(v, m)
	})
}

func (w *layered[T]) respec(t *testing.T, key, image string) {
	t.Helper()
	w.modify(t, key, func(_ T, m apistore.Meta) (T, error) {
		return w.kind.WithMeta(w.value(image), m)
	})
}

// modify writes change's result over key's object, again on a conflict.
func (w *layered[T]) modify(t *testing.T, key string, change func(T, apistore.Meta) (T, error)) {
	t.Helper()
	for range store.DefaultAttempts {
		obj, err := w.direct.Get(t.Context(), key)
		require.NoError(t, err)
		m, err := w.kind.Meta(obj.Value)
		require.NoError(t, err)
		v, err := change(obj.Value, m)
		require.NoError(t, err)
		_, err = w.direct.Update(t.Context(), key, v, obj.Revision)
		if !errors.Is(err, store.ErrConflict) {
			require.NoError(t, err)
			return
		}
	}
	t.Fatalf("%s kept changing while the test wrote it", key)
}

func (w *layered[T]) image(t *testing.T, key string) string {
	t.Helper()
	obj, err := w.direct.Get(t.Context(), key)
	require.NoError(t, err)
	b, err := json.Marshal(obj.Value)
	require.NoError(t, err)
	var v struct {
		Spec struct{ Image string } `json:"spec"`
	}
	require.NoError(t, json.Unmarshal(b, &v))
	return v.Spec.Image
}

func (w *layered[T]) keys(t *testing.T) []string {
	t.Helper()
	objs, _, err := w.direct.List(t.Context(), "")
	require.NoError(t, err)
	var keys []string
	for _, obj := range objs {
		keys = append(keys, obj.Key)
	}
	slices.Sort(keys)
	return keys
}

func (w *layered[T]) deletions(t *testing.T) func() []string {
	t.Helper()
	rev, err := w.direct.Revision(t.Context())
	require.NoError(t, err)
	watch, err := w.direct.Watch(t.Context(), "", rev)
	require.NoError(t, err)
	got := make(chan []string)
	go func() {
		var keys []string
		for ev := range watch.Events() {
			if ev.Type == store.Deleted {
				keys = append(keys, ev.Object.Key)
			}
		}
		got <- keys
	}()
	var keys []string
	var once sync.Once
	stop := func() []string {
		once.Do(func() {
			watch.Stop()
			keys = <-got
		})
		return keys
	}
	t.Cleanup(func() { stop() })
	return stop
}

// settleStep is the fake time settle lets pass at each step: more than a
// served watch holds its events back to batch them (a millisecond), far
// less than the collectors' backoffs.
const settleStep = 10 * time.Millisecond

func (w *layered[T]) settle(t *testing.T) {
	t.Helper()
	synctest.Wait()
	for {
		before, err := w.direct.Revision(t.Context())
		require.NoError(t, err)
		<-time.After(settleStep)
		synctest.Wait()
		after, err := w.direct.Revision(t.Context())
		require.NoError(t, err)
		if after == before {
			return
		}
	}
}

func (w *layered[T]) start(t *testing.T, opts owners.CollectorOptions) *running {
	t.Helper()
	if opts.RateLimiter == nil {
		opts.RateLimiter = queue.NewExponential[string](time.Second, time.Minute, 0)
	}
	c, err := owners.NewCollector[T](w.collected, w.kind, opts)
	require.NoError(t, err)
	return runCollector(t, c)
}

// runCollector runs c until the returned stop is called, which checks
// that Run returned nil.
func runCollector(t *testing.T, c collector) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	stopped := false
	r := &running{collector: c, stop: func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		require.NoError(t, <-done)
	}}
	t.Cleanup(r.stop)
	return r
}

// has reports whether key exists.
func has(t *testing.T, w world, key string) bool {
	t.Helper()
	_, ok := w.meta(t, key)
	return ok
}

// marked reports whether key exists marked for deletion.
func marked(t *testing.T, w world, key string) bool {
	t.Helper()
	m, ok := w.meta(t, key)
	return ok && m.Deleting()
}

// ownerKeys returns the keys key names as owners.
func ownerKeys(t *testing.T, w world, key string) []string {
	t.Helper()
	m, ok := w.meta(t, key)
	require.True(t, ok, "%s is gone", key)
	var keys []string
	for _, r := range m.Owners {
		keys = append(keys, r.Key)
	}
	return keys
}
