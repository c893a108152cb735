package robustness_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/owners"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
)

// ownersPatience bounds how long a collector may take to carry out a
// deletion of a few objects on any backend.
const ownersPatience = 20 * time.Second

// ownersLayer is the API-server layer over a store of JSON objects, as a
// collector and a user write through it.
type ownersLayer interface {
	store.Store[json.RawMessage]
	apistore.PropagatingDeleter
}

// ownersBackends are the stores the collector's propagation and cycle
// clauses are checked over in real time: memory, bolt, an embedded etcd
// member, and the layer served over HTTP above bolt, the collector a
// client of it. Each returns the layer the test and the collector write
// through.
func ownersBackends() []struct {
	name string
	open func(t *testing.T) ownersLayer
} {
	layer := func(t *testing.T, raw store.Store[json.RawMessage]) ownersLayer {
		s, err := apistore.New(raw, apistore.JSONKind{})
		require.NoError(t, err)
		return s
	}
	bolt := func(t *testing.T) store.Store[json.RawMessage] {
		s, err := boltstore.Open[json.RawMessage](filepath.Join(t.TempDir(), "owners.db"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	return []struct {
		name string
		open func(t *testing.T) ownersLayer
	}{
		{"memory", func(t *testing.T) ownersLayer {
			m := store.NewMemory[json.RawMessage]()
			t.Cleanup(func() { _ = m.Close() })
			return layer(t, m)
		}},
		{"bolt", func(t *testing.T) ownersLayer { return layer(t, bolt(t)) }},
		{"etcd", func(t *testing.T) ownersLayer {
			members, err := startEtcdCluster(t, 1)
			require.NoError(t, err)
			client, err := newEtcdClient(t, members)
			require.NoError(t, err)
			s, err := etcdstore.New[json.RawMessage](client, "owners/")
			require.NoError(t, err)
			return layer(t, s)
		}},
		{"http", func(t *testing.T) ownersLayer {
			return httpstoretest.ServeLayer(t, bolt(t), apistore.JSONKind{}, httpstoretest.Options{}).Client
		}},
	}
}

// ownersWorld is a layer with a collector running over it.
type ownersWorld struct {
	t *testing.T
	s ownersLayer
}

// startOwners runs a collector over s until the test ends.
func startOwners(t *testing.T, s ownersLayer) *ownersWorld {
	c, err := owners.NewCollector[json.RawMessage](s, apistore.JSONKind{}, owners.CollectorOptions{Workers: 2})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	require.NoError(t, c.WaitForSync(t.Context()))
	return &ownersWorld{t: t, s: s}
}

// create makes key with finalizers and owners; it returns a reference to
// it, blocking.
func (w *ownersWorld) create(key string, finalizers []string, refs ...apistore.Owner) apistore.Owner {
	v, err := apistore.JSONKind{}.WithMeta(json.RawMessage(`{"spec":{}}`), apistore.Meta{Finalizers: finalizers, Owners: refs})
	require.NoError(w.t, err)
	obj, err := w.s.Create(w.t.Context(), key, v)
	require.NoError(w.t, err)
	return apistore.Owner{Key: key, UID: obj.CreateRevision, Block: true}
}

// setOwners makes key name refs, again on a conflict with the collector.
func (w *ownersWorld) setOwners(key string, refs ...apistore.Owner) {
	_, err := store.Modify(w.t.Context(), w.s, key, func(v json.RawMessage) (json.RawMessage, error) {
		m, err := apistore.JSONKind{}.Meta(v)
		if err != nil {
			return nil, err
		}
		m.Owners = refs
		return apistore.JSONKind{}.WithMeta(v, m)
	})
	require.NoError(w.t, err)
}

// remove deletes key with propagation p, again on a conflict.
func (w *ownersWorld) remove(key string, p apistore.Propagation) {
	for range store.DefaultAttempts {
		obj, err := w.s.Get(w.t.Context(), key)
		require.NoError(w.t, err)
		_, _, err = w.s.DeleteWith(w.t.Context(), key, obj.Revision, p)
		if !errors.Is(err, store.ErrConflict) {
			require.NoError(w.t, err)
			return
		}
	}
	w.t.Fatalf("%s kept changing", key)
}

// meta returns key's metadata, and whether it is there.
func (w *ownersWorld) meta(key string) (apistore.Meta, bool) {
	obj, err := w.s.Get(w.t.Context(), key)
	if errors.Is(err, store.ErrNotFound) {
		return apistore.Meta{}, false
	}
	require.NoError(w.t, err)
	m, err := apistore.JSONKind{}.Meta(obj.Value)
	require.NoError(w.t, err)
	return m, true
}

// keys lists the keys there, sorted.
func (w *ownersWorld) keys() []string {
	objs, _, err := w.s.List(w.t.Context(), "")
	require.NoError(w.t, err)
	keys := []string{}
	for _, obj := range objs {
		keys = append(keys, obj.Key)
	}
	slices.Sort(keys)
	return keys
}

// await waits until exactly want are there, failing after ownersPatience.
func (w *ownersWorld) await(want ...string) {
	w.t.Helper()
	deadline := time.Now().Add(ownersPatience)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !slices.Equal(w.keys(), want) {
		if time.Now().After(deadline) {
			w.t.Fatalf("after %v: %v are there, want %v", ownersPatience, w.keys(), want)
		}
		<-tick.C
	}
}

// TestTheCollectorBreaksACycleOfBlockingReferencesOnEveryBackend: a
// foreground deletion of a member of a cycle of three blocking references
// deletes all three (owners' TestACycleOfBlockingReferencesDoesNotHoldAForegroundDeletion
// on memory, bolt, etcd and over HTTP).
func TestTheCollectorBreaksACycleOfBlockingReferencesOnEveryBackend(t *testing.T) {
	for _, b := range ownersBackends() {
		t.Run(b.name, func(t *testing.T) {
			w := startOwners(t, b.open(t))
			ring := []apistore.Owner{w.create("pods/1", nil), w.create("pods/2", nil), w.create("pods/3", nil)}
			for i, ref := range ring {
				w.setOwners(ref.Key, ring[(i+2)%3])
			}
			w.create("other", nil)
			w.remove("pods/1", apistore.Foreground)
			w.await("other")
		})
	}
}

// TestAnExplicitPropagationDecidesWhatBecomesOfTheChildrenOnEveryBackend:
// an owner carrying the orphan finalizer, deleted with an explicit
// Background, has its children collected; deleted in the Foreground, it
// carries the foreground finalizer alone and its children are deleted
// (owners' TestAnExplicitPropagationDecidesWhatBecomesOfTheChildren on
// memory, bolt, etcd and over HTTP).
func TestAnExplicitPropagationDecidesWhatBecomesOfTheChildrenOnEveryBackend(t *testing.T) {
	for _, b := range ownersBackends() {
		t.Run(b.name, func(t *testing.T) {
			w := startOwners(t, b.open(t))
			w.create("other", nil)
			rs := w.create("rs/bg", []string{apistore.OrphanFinalizer})
			w.create("pods/bg", nil, rs)
			w.remove("rs/bg", apistore.Background)
			w.await("other")

			rs = w.create("rs/fg", []string{apistore.OrphanFinalizer, "test/hold"})
			w.create("pods/fg", nil, rs)
			w.remove("rs/fg", apistore.Foreground)
			if m, ok := w.meta("rs/fg"); ok {
				require.False(t, m.HasFinalizer(apistore.OrphanFinalizer), "the owner kept the orphan finalizer: %v", m.Finalizers)
			}
			w.await("other", "rs/fg")
		})
	}
}
