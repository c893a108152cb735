package reconcile

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/reconcile/internal/cache"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// captureWorld is a store's history made of random multi-key transactions,
// delivered to a cache with a journal in batches that end anywhere,
// in the middle of a revision included, as a watch delivers them.
type captureWorld struct {
	t       *testing.T
	rng     *rand.Rand
	in      *cache.Cache[*item]
	j       *journal[*item]
	rev     int64
	objects map[string]store.Object[*item]
	history []store.Event[*item]
	sent    int // events of history delivered to the cache
	// written is the checkpoint the captures built, and writtenRev its
	// revision.
	written    map[string]store.Object[*item]
	writtenRev int64
}

// txn writes 1 to 4 distinct keys at one new revision.
func (w *captureWorld) txn() {
	w.rev++
	for _, k := range w.rng.Perm(8)[:1+w.rng.IntN(4)] {
		key := fmt.Sprintf("k%d", k)
		old, had := w.objects[key]
		switch {
		case had && w.rng.IntN(3) == 0:
			delete(w.objects, key)
			old.Revision = w.rev
			w.history = append(w.history, store.Event[*item]{Type: store.Deleted, Object: old})
		case had:
			obj := store.Object[*item]{Key: key, Value: &item{Want: int(w.rev)}, Revision: w.rev, CreateRevision: old.CreateRevision}
			w.objects[key] = obj
			w.history = append(w.history, store.Event[*item]{Type: store.Updated, Object: obj})
		default:
			obj := store.Object[*item]{Key: key, Value: &item{Want: int(w.rev)}, Revision: w.rev, CreateRevision: w.rev}
			w.objects[key] = obj
			w.history = append(w.history, store.Event[*item]{Type: store.Created, Object: obj})
		}
	}
}

// deliver hands the cache the next few events, and a progress report
// if they end at a revision boundary.
func (w *captureWorld) deliver() {
	n := min(len(w.history)-w.sent, 1+w.rng.IntN(5))
	batch := slices.Clone(w.history[w.sent : w.sent+n])
	w.sent += n
	if w.rng.IntN(2) == 0 {
		// Every change up to here delivered, unless the next event shares
		// the last one's revision.
		upTo := w.rev
		if w.sent < len(w.history) {
			upTo = w.history[w.sent].Object.Revision - 1
		}
		batch = append(batch, store.Event[*item]{Type: store.Progress, Object: store.Object[*item]{Revision: upTo}})
	}
	if len(batch) > 0 {
		w.in.Apply(batch, false)
	}
}

// relist installs a list of the store as it is now.
func (w *captureWorld) relist() {
	objs := slices.SortedFunc(maps.Values(w.objects), func(a, b store.Object[*item]) int { return strings.Compare(a.Key, b.Key) })
	w.in.Replace(objs, w.rev, "", false)
	w.sent = len(w.history)
}

// capture applies a capture to the checkpoint written so far and checks
// that it is the store at the capture's revision, whole.
func (w *captureWorld) capture() {
	b, ok := w.j.capture(w.in, time.Hour)
	if !ok {
		return
	}
	require.NoError(w.t, b.Check())
	require.GreaterOrEqual(w.t, b.Revision, w.writtenRev, "a capture went back in revisions")
	if b.Replace {
		w.written = map[string]store.Object[*item]{}
	}
	for _, obj := range b.Put {
		w.written[obj.Key] = obj
	}
	for _, key := range b.Delete {
		delete(w.written, key)
	}
	w.writtenRev = b.Revision
	require.Equal(w.t, stateAt(w.history, b.Revision, ""), w.written,
		"the checkpoint at revision %d is not the store at that revision (the cache has published up to %d)", b.Revision, w.in.Revision())
}

// A checkpoint captured at any moment, even while the cache has applied
// part of a multi-key transaction, is the store at the capture's revision:
// every object at its revision as the store then held it, every change of
// a revision or none. Checked after every capture of random histories
// delivered in batches that end anywhere, with re-lists in between.
func TestACheckpointHoldsEveryChangeOfARevisionOrNone(t *testing.T) {
	for seed := range 300 {
		w := &captureWorld{t: t, rng: rand.New(rand.NewPCG(uint64(seed), 11)), objects: map[string]store.Object[*item]{}}
		w.j = newJournal[*item]()
		w.in = cache.New[*item](nil, cache.Options[*item]{Observer: w.j})
		for range 3 {
			w.txn()
		}
		w.relist()
		w.capture()
		require.Equal(t, len(w.objects), len(w.written), "seed %d: the first capture is not whole", seed)
		for range 80 {
			switch op := w.rng.IntN(10); {
			case op < 4:
				w.txn()
			case op < 7:
				w.deliver()
			case op < 9:
				w.capture()
			default:
				w.relist()
			}
			if t.Failed() {
				t.Fatalf("seed %d", seed)
			}
		}
	}
}
