package reconcile

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// newTxnController builds a controller over a txnStore.
func newTxnController(t *testing.T, s store.Store[*item], rec Reconciler[*item], opts Options[*item]) *Controller[*item] {
	t.Helper()
	if opts.Name == "" {
		opts.Name = "test"
	}
	c, err := New(s, rec, opts)
	require.NoError(t, err)
	return c
}

func TestEveryKeyOfAMultiKeyTransactionIsReconciled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTxnStore()
		rec := &recorder{}
		c := newTxnController(t, s, rec, Options[*item]{Workers: 2})
		defer start(t, c)()

		rev := s.txn(write{"a", &item{Want: 1}}, write{"b", &item{Want: 2}}, write{"c", &item{Want: 3}})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, c.WaitForRevision(ctx, rev))
		for _, k := range []string{"a", "b", "c"} {
			req, ok := rec.last(k)
			require.True(t, ok, "key %s of the transaction was never reconciled", k)
			require.Equal(t, rev, req.Object.Revision)
			obj, ok := c.Lister().Get(k)
			require.True(t, ok, "key %s missing from the cache", k)
			require.Equal(t, rev, obj.Revision)
		}
	})
}

func TestResumingInsideARevisionNeitherSkipsNorRepeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTxnStore()
		var mu sync.Mutex
		changes := map[string]int{}
		// Count the cache's changes per key: a repeat would be reported twice.
		c := newTxnController(t, s, &recorder{}, Options[*item]{Predicates: []Predicate[*item]{
			func(_, cur *store.Object[*item]) bool {
				mu.Lock()
				defer mu.Unlock()
				if cur != nil {
					changes[cur.Key]++
				}
				return true
			},
		}})
		defer start(t, c)()
		synctest.Wait()

		s.cutWatchesAfter("b") // the watch breaks between b and c
		rev := s.txn(write{"a", &item{}}, write{"b", &item{}}, write{"c", &item{}})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, c.WaitForRevision(ctx, rev))
		require.Greater(t, s.watchCalls(), 1, "the watch was not resumed")
		for _, k := range []string{"a", "b", "c"} {
			_, ok := c.Lister().Get(k)
			require.True(t, ok, "key %s skipped", k)
		}
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1}, changes, "a resumed watch repeated or skipped a change")
	})
}

func TestWaitForRevisionOfAWriteOutsideThePrefixReturns(t *testing.T) {
	for name, newStore := range map[string]func() store.Store[*item]{
		"txn":    func() store.Store[*item] { return newTxnStore() },
		"memory": func() store.Store[*item] { return store.NewMemory[*item]() },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newStore()
				// A heartbeat far beyond the wait: only WaitForRevision's
				// own request for progress can prove the revision.
				c := newTxnController(t, s, &recorder{}, Options[*item]{Prefix: "in/", HeartbeatInterval: time.Hour})
				defer start(t, c)()
				put(t, s, "in/a", &item{})
				rev := put(t, s, "out/b", &item{})
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if _, ok := any(s).(*txnStore); !ok && !watchReportsProgress(t, s) {
					t.Skip("the memory store's watch does not report progress yet")
				}
				require.NoError(t, c.WaitForRevision(ctx, rev), "WaitForRevision hung on a write outside the prefix")
			})
		})
	}
}

// watchReportsProgress reports whether s's watches implement
// store.ProgressRequester.
func watchReportsProgress(t *testing.T, s store.Store[*item]) bool {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := s.Watch(ctx, "", 0)
	require.NoError(t, err)
	defer w.Stop()
	_, ok := w.(store.ProgressRequester)
	return ok
}

func TestWaitForRevisionWaitsForASupersededChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTxnStore()
		release := make(chan struct{})
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			if req.Key == "block" {
				<-release
			}
			return Result{}, nil
		}}
		c := newTxnController(t, s, rec, Options[*item]{Workers: 1})
		defer start(t, c)()
		synctest.Wait()
		c.Enqueue("block") // a key with no change to wait for
		synctest.Wait()    // the only worker is busy with "block"
		r1 := s.txn(write{"k", &item{Want: 1}})
		s.txn(write{"k", &item{Want: 2}}) // supersedes r1 before any worker gets to k

		returned := make(chan error, 1)
		go func() { returned <- c.WaitForRevision(context.Background(), r1) }()
		synctest.Wait()
		select {
		case err := <-returned:
			t.Fatalf("WaitForRevision(%d) returned (%v) before k was reconciled", r1, err)
		default:
		}
		close(release)
		require.NoError(t, <-returned)
		require.Equal(t, 1, rec.count("k"))
	})
}

// TestWaitForRevisionReturnsOnlyOnceEveryChangeUpToItIsReconciled writes
// random schedules (updates, deletes and re-creates, keys inside and
// outside the prefix, several keys per revision) while reconciles fail at
// random, and checks each time WaitForRevision(R) returns that every key
// changed at a revision up to R was reconciled, successfully, with an
// object at least that new.
func TestWaitForRevisionReturnsOnlyOnceEveryChangeUpToItIsReconciled(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { waitForRevisionSchedule(t, seed) })
		})
	}
}

func waitForRevisionSchedule(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	s := newTxnStore()
	var mu sync.Mutex
	// done[key] is the newest revision a successful reconcile of key saw
	// (for a deletion, the revision of the delete).
	done := map[string]int64{}
	var failMu sync.Mutex
	failRng := rand.New(rand.NewPCG(seed, 2))
	rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
		failMu.Lock()
		fail := failRng.IntN(4) == 0
		failMu.Unlock()
		if fail {
			return Result{}, fmt.Errorf("injected failure")
		}
		mu.Lock()
		done[req.Key] = max(done[req.Key], req.Object.Revision)
		mu.Unlock()
		return Result{}, nil
	}}
	c := newTxnController(t, s, rec, Options[*item]{Prefix: "in/", Workers: 3, HeartbeatInterval: time.Hour})
	defer start(t, c)()

	// changed[key] lists the revisions at which key changed.
	changed := map[string][]int64{}
	live := map[string]bool{}
	keys := []string{"in/a", "in/b", "in/c", "in/d", "out/x"}
	for round := range 40 {
		var writes []write
		// Distinct keys per transaction, as etcd requires.
		for _, i := range rng.Perm(len(keys))[:1+rng.IntN(3)] {
			k := keys[i]
			if rng.IntN(3) == 0 && live[k] {
				writes = append(writes, write{k, nil})
				live[k] = false
			} else {
				writes = append(writes, write{k, &item{Want: round}})
				live[k] = true
			}
		}
		rev := s.txn(writes...)
		for _, w := range writes {
			if len(changed[w.key]) == 0 || changed[w.key][len(changed[w.key])-1] != rev {
				changed[w.key] = append(changed[w.key], rev)
			}
		}
		if rng.IntN(3) != 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		require.NoError(t, c.WaitForRevision(ctx, rev), "WaitForRevision(%d) blocked", rev)
		cancel()
		mu.Lock()
		for k, revs := range changed {
			if k[:3] != "in/" {
				continue
			}
			// The newest change at or below rev must be covered.
			var want int64
			for _, r := range revs {
				if r <= rev {
					want = r
				}
			}
			if want > 0 {
				require.GreaterOrEqual(t, done[k], want, "seed %d: WaitForRevision(%d) returned before %s's change at %d was reconciled", seed, rev, k, want)
			}
		}
		mu.Unlock()
	}
}
