package reconcile

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
)

// TestConcurrentOwnWritesNeitherWakeTheirKeysNorLinger runs workers that
// write status through Request.Store while someone else keeps changing
// half of the keys, with real goroutines (the interleavings of a write's
// end with observe sorting out its echo are the point, and a synctest
// bubble would serialise them). Every key converges on its last change
// (no change by someone else is lost among the echoes), a key no one
// else touches is reconciled exactly once (no echo wakes it, whether the
// write's end or observe comes first), and once every echo is observed no
// record of a write is left.
//
// It runs with and without a predicate that lets only changes of Want
// through: without, an echo observed while its write is in flight is
// held; with, it is let go at once, and the write's end must find out
// that observe has seen it.
func TestConcurrentOwnWritesNeitherWakeTheirKeysNorLinger(t *testing.T) {
	wantChanged := func(old, cur *store.Object[*item]) bool {
		return old == nil || cur == nil || old.Value.Want != cur.Value.Want
	}
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) { concurrentOwnWrites(t, uint64(round), nil) })
		t.Run(fmt.Sprint(round, "/want-changed"), func(t *testing.T) { concurrentOwnWrites(t, uint64(round), wantChanged) })
	}
}

func concurrentOwnWrites(t *testing.T, seed uint64, p Predicate[*item]) {
	const keys, changes = 2000, 3000
	ctx := context.Background()
	// History and lag enough for every event: a re-list would reconcile
	// every key again, and this test counts reconciles.
	s := store.NewMemory[*item](store.WithHistory(1_000_000), store.WithWatchLag(1_000_000))
	key := func(i int) string { return fmt.Sprintf("k%04d", i) }
	for i := range keys {
		put(t, s, key(i), &item{Want: 1})
	}
	var mu sync.Mutex
	runs := map[string]int{}
	rec := ReconcilerFunc[*item](func(ctx context.Context, req Request[*item]) (Result, error) {
		mu.Lock()
		runs[req.Key]++
		mu.Unlock()
		if req.Deleted || req.Object.Value.Seen == req.Object.Value.Want {
			return Result{}, nil
		}
		next := *req.Object.Value
		next.Seen = next.Want
		_, err := req.Store.Update(ctx, req.Key, &next, req.Object.Revision)
		return Result{}, err
	})
	opts := Options[*item]{Name: "concurrent", Workers: 8}
	if p != nil {
		opts.Predicates = []Predicate[*item]{p}
	}
	c, err := New(s, rec, opts)
	require.NoError(t, err)
	stop := start(t, c)
	// Someone else raises Want on odd keys while the workers write status.
	rng := rand.New(rand.NewPCG(seed, 11))
	for range changes {
		k := key(2*rng.IntN(keys/2) + 1)
		_, err := store.CreateOrUpdate(ctx, s, k, func(v *item, _ bool) (*item, error) {
			next := *v
			next.Want++
			return &next, nil
		})
		require.NoError(t, err)
	}
	// Settled: the cache reflects every write, and no reconcile wrote
	// anything more since.
	for {
		rev, err := s.Revision(ctx)
		require.NoError(t, err)
		require.NoError(t, c.WaitForRevision(ctx, rev))
		if again, err := s.Revision(ctx); err == nil && again == rev {
			break
		}
	}
	stop()
	for i := range keys {
		obj, err := s.Get(ctx, key(i))
		require.NoError(t, err)
		require.Equal(t, obj.Value.Want, obj.Value.Seen, "%s did not converge on its last change", key(i))
		if i%2 == 0 {
			require.Equal(t, 1, runs[key(i)], "%s, which only the controller wrote, was reconciled %d times", key(i), runs[key(i)])
		}
	}
	held, _, _ := c.led.own.sizes()
	require.Zero(t, held, "records of writes whose echoes were observed are left")
}

// TestTheEchoOfAWriteAReconcileCoveredAheadLetsItsRecordGo: a reconcile
// given the object the controller wrote, before observe heard of it,
// covers its change ahead; when the echo arrives it is dropped as covered,
// and the write's record must go with it (it used to stay until the key
// changed again, found by the test above).
func TestTheEchoOfAWriteAReconcileCoveredAheadLetsItsRecordGo(t *testing.T) {
	c := idleController[string](t, "ahead")
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.led
	written := store.Object[string]{Key: "k", Value: "v", Revision: 7}
	l.writeEnded("k", l.writeBegun("k"), written, false, true, 0)
	held, _, _ := l.own.sizes()
	require.Equal(t, 1, held, "a write whose echo observe has yet to see is kept")
	obj, deleted := l.reconcileBegun("k", 0, store.Object[string]{Key: "k", Value: "old", Revision: 3}, true)
	require.False(t, deleted)
	require.Equal(t, written, obj, "read your writes")
	l.reconcileEnded(ending{key: "k", revision: obj.Revision, outcome: Success, start: time.Now()})
	require.Equal(t, int64(7), l.coveredAhead["k"], "the reconcile covered the write ahead of observe")
	echo := []change[string]{{Cur: written, HasCur: true}}
	l.batchObserved(echo)
	v, _, _ := l.changeObserved(&echo[0], true, 0)
	require.Equal(t, drop, v, "the echo wakes nothing")
	held, _, _ = l.own.sizes()
	require.Zero(t, held, "the write's record outlived its echo")
}
