package cache

import (
	"github.com/converge-go/converge/internal/mapshrink"
	"github.com/converge-go/converge/store"
)

// index maps index values to the keys of the cached objects that have them.
// Like the cache's own maps, its maps are rebuilt small once most
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
