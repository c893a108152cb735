package cache

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// TestTheCacheHoldsWhatWasReadWhileItsEditCountStands: a request reads
// the cache before it takes the controller's lock and trusts the read
// once it holds the lock only if Edits still returns the count
// LookupCounted read. That is sound only if every way the cache's objects
// or tombstones change counts an edit. Random lists, watch batches
// (creates, updates, deletes, repeats of applied revisions, progress),
// tombstones let go and shrinks are applied to a cache that keeps
// tombstones; after each step, if the count stands, every key must look
// up as it did before the step. A change made without counting fails it.
func TestTheCacheHoldsWhatWasReadWhileItsEditCountStands(t *testing.T) {
	type read struct {
		obj              store.Object[*item]
		present, deleted bool
	}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		in := New[*item](nil, Options[*item]{Tombstones: true})
		keys := make([]string, 6)
		for i := range keys {
			keys[i] = fmt.Sprintf("k%d", i)
		}
		snapshot := func() (map[string]read, uint64) {
			reads := map[string]read{}
			var count uint64
			for i, key := range keys {
				obj, present, deleted, edits := in.LookupCounted(key)
				if i == 0 {
					count = edits
				}
				require.Equal(t, count, edits, "seed %d: the count moved with nothing applied", seed)
				reads[key] = read{obj, present, deleted}
			}
			return reads, count
		}
		rev := int64(0)
		object := func(key string) store.Object[*item] {
			return store.Object[*item]{Key: key, Value: &item{Want: rng.IntN(3)}, Revision: rev}
		}
		var steps []string
		for range 60 {
			before, count := snapshot()
			var step string
			switch rng.IntN(5) {
			case 0: // a list of some keys
				rev++
				var objs []store.Object[*item]
				for _, key := range keys {
					if rng.IntN(2) == 0 {
						objs = append(objs, object(key))
					}
				}
				in.Replace(objs, rev, "", false)
				step = fmt.Sprintf("list of %d at %d", len(objs), rev)
			case 1, 2: // a watch batch
				var evs []store.Event[*item]
				for range 1 + rng.IntN(4) {
					switch r := rng.IntN(8); {
					case r == 0:
						evs = append(evs, store.Event[*item]{Type: store.Progress, Object: store.Object[*item]{Revision: rev}})
					case r == 1 && rev > 0:
						// a revision already applied, as a resumed watch repeats
						evs = append(evs, store.Event[*item]{Type: store.Updated, Object: store.Object[*item]{Key: keys[rng.IntN(len(keys))], Value: &item{}, Revision: rev - 1}})
					default:
						rev++
						typ := store.Updated
						if r < 4 {
							typ = store.Deleted
						}
						evs = append(evs, store.Event[*item]{Type: typ, Object: object(keys[rng.IntN(len(keys))])})
					}
				}
				in.Apply(evs, rng.IntN(2) == 0)
				step = fmt.Sprintf("batch of %d up to %d", len(evs), rev)
			case 3: // a tombstone let go, or kept for a newer removal
				key := keys[rng.IntN(len(keys))]
				in.ForgetTombstone(key, rng.Int64N(rev+2))
				step = "forget " + key
			case 4: // the maps rebuilt, as at the end of a batch
				in.mu.Lock()
				in.shrinkLocked()
				in.mu.Unlock()
				step = "shrink"
			}
			steps = append(steps, step)
			if in.Edits() != count {
				continue
			}
			after, _ := snapshot()
			require.Equal(t, before, after, "seed %d: the cache changed with its edit count standing, after %v", seed, steps)
		}
	}
}
