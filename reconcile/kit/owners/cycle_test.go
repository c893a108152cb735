package owners_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/owners"
	"github.com/converge-go/converge/store/apistore"
)

// rewirer is a world whose objects' metadata a test sets after their
// creation: through the layer (to close a cycle of references, which
// creation alone cannot), or around it, as a program writing the store
// directly, or an older layer, may have left it.
type rewirer interface {
	// setOwners makes key name refs, through the layer.
	setOwners(t *testing.T, key string, refs ...apistore.Owner)
	// writeAround writes key with the metadata change returns, around the
	// layer, which keeps the mark as written.
	writeAround(t *testing.T, key string, change func(apistore.Meta) apistore.Meta)
}

func (w *layered[T]) setOwners(t *testing.T, key string, refs ...apistore.Owner) {
	t.Helper()
	w.modify(t, key, func(v T, m apistore.Meta) (T, error) {
		m.Owners = refs
		return w.kind.WithMeta(v, m)
	})
}

func (w *layered[T]) writeAround(t *testing.T, key string, change func(apistore.Meta) apistore.Meta) {
	t.Helper()
	obj, err := w.direct.Get(t.Context(), key)
	require.NoError(t, err)
	m, err := w.kind.Meta(obj.Value)
	require.NoError(t, err)
	v, err := w.kind.WithMeta(obj.Value, change(m))
	require.NoError(t, err)
	_, err = w.fault.Update(t.Context(), key, v, obj.Revision)
	require.NoError(t, err)
}

// ring makes keys, each owned (blocking) by the one before it and the
// first by the last: a cycle of blocking references.
func ring(t *testing.T, w world, keys ...string) {
	t.Helper()
	for _, key := range keys {
		w.create(t, key, nil)
	}
	for i, key := range keys {
		owner := keys[(i+len(keys)-1)%len(keys)]
		w.(rewirer).setOwners(t, key, w.ref(t, owner, true))
	}
}

// TestACycleOfBlockingReferencesDoesNotHoldAForegroundDeletion: deleting a
// member of a cycle of blocking owner references in the foreground
// deletes every member, as in Kubernetes' conformance test "should not be
// blocked by dependency circle": the collector makes the references of the
// member whose child already waits non-blocking before deleting it. A
// member's own finalizer holds the cycle until it is removed, no longer.
func TestACycleOfBlockingReferencesDoesNotHoldAForegroundDeletion(t *testing.T) {
	for name, keys := range map[string][]string{
		"two":   {"pods/1", "pods/2"},
		"three": {"pods/1", "pods/2", "pods/3"},
	} {
		t.Run(name, func(t *testing.T) {
			each(t, func(t *testing.T, w world) {
				w.start(t, owners.CollectorOptions{Workers: 2})
				ring(t, w, keys...)
				w.create(t, "other", nil)
				w.settle(t)

				require.True(t, w.remove(t, keys[0], apistore.Foreground))
				w.settle(t)
				require.Equal(t, []string{"other"}, w.keys(t), "the cycle held its deletion")
			})
		})
	}
	t.Run("held", func(t *testing.T) {
		each(t, func(t *testing.T, w world) {
			w.start(t, owners.CollectorOptions{})
			w.create(t, "pods/1", nil)
			w.create(t, "pods/2", hold)
			w.create(t, "pods/3", nil)
			for i, key := range []string{"pods/1", "pods/2", "pods/3"} {
				owner := []string{"pods/3", "pods/1", "pods/2"}[i]
				w.(rewirer).setOwners(t, key, w.ref(t, owner, true))
			}
			w.settle(t)

			w.remove(t, "pods/1", apistore.Foreground)
			w.settle(t)
			require.True(t, marked(t, w, "pods/2"), "the held member went")
			w.unhold(t, "pods/2")
			w.settle(t)
			require.Empty(t, w.keys(t), "the cycle held its deletion")
		})
	})
}

// TestAnExplicitPropagationDecidesWhatBecomesOfTheChildren: an owner that
// carries the orphan finalizer before its deletion, deleted with an
// explicit Background, loses it (and, with no other finalizer, goes at
// once): its children are collected; deleted in the Foreground, it
// carries the foreground finalizer alone, waits for its blocking child and
// deletes it; deleted with no propagation, it keeps the orphan finalizer,
// and its children stay.
func TestAnExplicitPropagationDecidesWhatBecomesOfTheChildren(t *testing.T) {
	for _, tc := range []struct {
		p    apistore.Propagation
		left []string
	}{
		{apistore.Background, []string{"other"}},
		{apistore.Foreground, []string{"other"}},
		{"", []string{"other", "pods/a"}},
	} {
		t.Run(string(tc.p)+"/", func(t *testing.T) {
			each(t, func(t *testing.T, w world) {
				w.start(t, owners.CollectorOptions{})
				w.create(t, "rs/web", []string{apistore.OrphanFinalizer})
				w.create(t, "pods/a", hold, w.ref(t, "rs/web", true))
				w.create(t, "other", nil)
				w.settle(t)

				w.remove(t, "rs/web", tc.p)
				w.settle(t)
				if m, ok := w.meta(t, "rs/web"); ok {
					require.False(t, m.HasFinalizer(apistore.OrphanFinalizer) && m.HasFinalizer(apistore.ForegroundFinalizer),
						"the owner carries both finalizers: %v", m.Finalizers)
				}
				if tc.p == apistore.Foreground {
					require.True(t, marked(t, w, "rs/web"), "the owner went before its blocking child")
				}
				if has(t, w, "pods/a") && marked(t, w, "pods/a") {
					w.unhold(t, "pods/a")
					w.settle(t)
				}
				require.Equal(t, tc.left, w.keys(t))
			})
		})
	}
}

// TestTheCollectorFollowsThePropagationTheMarkRecords: a mark that carries
// a garbage-collector finalizer its propagation does not stand for
// (written around the layer, or by one that kept it) is carried out as
// its propagation says, and the stray finalizer is removed: a Background
// mark with the orphan finalizer collects the children once the owner is
// gone, and a Foreground one with both deletes them first.
func TestTheCollectorFollowsThePropagationTheMarkRecords(t *testing.T) {
	for _, p := range []apistore.Propagation{apistore.Background, apistore.Foreground} {
		t.Run(string(p), func(t *testing.T) {
			each(t, func(t *testing.T, w world) {
				w.start(t, owners.CollectorOptions{})
				w.create(t, "rs/web", hold)
				w.create(t, "pods/a", nil, w.ref(t, "rs/web", true))
				w.settle(t)

				w.(rewirer).writeAround(t, "rs/web", func(m apistore.Meta) apistore.Meta {
					m.Finalizers = append(m.Finalizers, apistore.OrphanFinalizer)
					if p == apistore.Foreground {
						m.Finalizers = append(m.Finalizers, apistore.ForegroundFinalizer)
					}
					m.Deletion = &apistore.Deletion{Revision: 1, Propagation: p}
					return m
				})
				w.settle(t)
				m, ok := w.meta(t, "rs/web")
				require.True(t, ok)
				require.Equal(t, hold, m.Finalizers, "the collector left a finalizer the mark does not stand for")
				if p == apistore.Foreground {
					require.False(t, has(t, w, "pods/a"), "the child of a foreground deletion stayed")
				} else {
					require.Equal(t, []string{"rs/web"}, ownerKeys(t, w, "pods/a"), "the child of a background deletion was orphaned")
				}

				w.unhold(t, "rs/web")
				w.settle(t)
				require.Empty(t, w.keys(t))
			})
		})
	}
}
