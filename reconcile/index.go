package reconcile

import (
	"slices"
	"strings"

	"github.com/converge-go/converge/internal/mapshrink"
	"github.com/converge-go/converge/store"
)

// index maps index values to the keys of the cached objects that have them.
// Like the controller's per-key maps, its maps are rebuilt small once most
// of their entries are gone (a mass deletion), and an emptied set goes.
type index[T any] struct {
	fn   func(obj store.Object[T]) []string
	keys map[string]*keySet
	peak int // the most values held since keys was last rebuilt
}

// keySet is the keys of one index value.
type keySet struct {
	keys map[string]struct{}
	peak int
}

func newIndex[T any](fn func(obj store.Object[T]) []string) *index[T] {
	return &index[T]{fn: fn, keys: make(map[string]*keySet)}
}

func (ix *index[T]) add(obj store.Object[T]) {
	for _, v := range ix.fn(obj) {
		set, ok := ix.keys[v]
		if !ok {
			set = &keySet{keys: make(map[string]struct{})}
			ix.keys[v] = set
			mapshrink.Note(ix.keys, &ix.peak)
		}
		set.keys[obj.Key] = struct{}{}
		mapshrink.Note(set.keys, &set.peak)
	}
}

func (ix *index[T]) remove(obj store.Object[T]) {
	for _, v := range ix.fn(obj) {
		set, ok := ix.keys[v]
		if !ok {
			continue
		}
		delete(set.keys, obj.Key)
		if len(set.keys) > 0 {
			set.keys = mapshrink.Shrunk(set.keys, &set.peak, mapshrink.Floor)
			continue
		}
		delete(ix.keys, v)
		ix.keys = mapshrink.Shrunk(ix.keys, &ix.peak, mapshrink.Floor)
	}
}

// Lister reads a controller's cache: the latest objects seen in the store,
// without a store round trip. Objects are shared with the cache and, for the
// in-memory store, with the store: do not mutate them.
type Lister[T any] struct {
	in *informer[T]
}

// Get returns the cached object at key.
func (l Lister[T]) Get(key string) (store.Object[T], bool) { return l.in.get(key) }

// List returns every cached object, sorted by key.
func (l Lister[T]) List() []store.Object[T] {
	l.in.mu.RLock()
	defer l.in.mu.RUnlock()
	out := make([]store.Object[T], 0, len(l.in.objects))
	for _, obj := range l.in.objects {
		out = append(out, obj)
	}
	sortObjects(out)
	return out
}

// ByIndex returns the cached objects whose index name has value, sorted by
// key. An unknown index yields nothing.
func (l Lister[T]) ByIndex(name, value string) []store.Object[T] {
	l.in.mu.RLock()
	defer l.in.mu.RUnlock()
	ix, ok := l.in.indexes[name]
	if !ok {
		return nil
	}
	var keys map[string]struct{}
	if set := ix.keys[value]; set != nil {
		keys = set.keys
	}
	out := make([]store.Object[T], 0, len(keys))
	for key := range keys {
		out = append(out, l.in.objects[key])
	}
	sortObjects(out)
	return out
}

func sortObjects[T any](objs []store.Object[T]) {
	slices.SortFunc(objs, func(a, b store.Object[T]) int { return strings.Compare(a.Key, b.Key) })
}
