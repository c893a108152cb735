package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
)

// batchRecorder is a BatchReconciler that records its batches and answers
// each request with fn.
type batchRecorder struct {
	recorder
	mu      sync.Mutex
	batches [][]string
	results func(reqs []Request[*item]) []BatchResult
}

func (b *batchRecorder) ReconcileBatch(ctx context.Context, reqs []Request[*item]) []BatchResult {
	keys := make([]string, len(reqs))
	for i, r := range reqs {
		keys[i] = r.Key
	}
	b.mu.Lock()
	b.batches = append(b.batches, keys)
	b.mu.Unlock()
	if b.results != nil {
		return b.results(reqs)
	}
	out := make([]BatchResult, len(reqs))
	for i, req := range reqs {
		out[i].Result, out[i].Err = b.Reconcile(ctx, req)
	}
	return out
}

func (b *batchRecorder) seen() (batches [][]string, perKey map[string]int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	perKey = map[string]int{}
	for _, batch := range b.batches {
		seen := map[string]bool{}
		for _, k := range batch {
			if seen[k] {
				panic("a key twice in one batch: " + k)
			}
			seen[k] = true
			perKey[k]++
		}
	}
	return b.batches, perKey
}

func putMany(t *testing.T, s store.Store[*item], n int) int64 {
	var rev int64
	for i := range n {
		rev = put(t, s, fmt.Sprintf("items/%03d", i), &item{Want: 1})
	}
	return rev
}

// TestBatchReconcilerConvergesEveryKeyInBatchesOfAtMostBatchSize: with
// BatchSize 8, the keys go to ReconcileBatch in batches of at most 8 (of 8
// while that many are ready), each key once, and WaitForRevision waits
// for all of them.
func TestBatchReconcilerConvergesEveryKeyInBatchesOfAtMostBatchSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		rev := putMany(t, s, 50)
		rec := &batchRecorder{}
		c, err := New(s, rec, Options[*item]{Name: "batch", Prefix: "items/", Workers: 2, BatchSize: 8})
		require.NoError(t, err)
		stop := start(t, c)
		defer stop()
		require.NoError(t, c.WaitForRevision(t.Context(), rev))
		batches, perKey := rec.seen()
		require.Len(t, perKey, 50)
		for k, n := range perKey {
			require.Equal(t, 1, n, "key %s reconciled %d times", k, n)
		}
		require.Equal(t, 8, len(batches[0]), "the first batch takes 8 of the 50 ready keys")
		for _, b := range batches {
			require.LessOrEqual(t, len(b), 8)
		}
		require.Zero(t, rec.count("items/none"))
	})
}

// TestBatchKeysSucceedFailAndBackOffOnTheirOwn: in one batch, a failing
// key backs off and is retried with its own retries count while the keys
// that succeeded are not reconciled again; a key without a result (too few
// results) fails with ErrInvalid and is retried.
func TestBatchKeysSucceedFailAndBackOffOnTheirOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		rev := putMany(t, s, 6)
		var mu sync.Mutex
		attempts := map[string][]int{}
		rec := &batchRecorder{}
		rec.results = func(reqs []Request[*item]) []BatchResult {
			out := make([]BatchResult, 0, len(reqs))
			mu.Lock()
			defer mu.Unlock()
			for _, req := range reqs {
				attempts[req.Key] = append(attempts[req.Key], req.Retries)
				switch {
				case req.Key == "items/001" && req.Retries < 2:
					out = append(out, BatchResult{Err: errors.New("flaky")})
				case req.Key == "items/005" && req.Retries == 0:
					return out // items/005 is last: no result for it
				default:
					out = append(out, BatchResult{})
				}
			}
			return out
		}
		c, err := New(s, rec, Options[*item]{Name: "batch", Prefix: "items/", BatchSize: 10})
		require.NoError(t, err)
		stop := start(t, c)
		defer stop()
		require.NoError(t, c.WaitForRevision(t.Context(), rev))
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, []int{0, 1, 2}, attempts["items/001"], "the failing key retried with its own backoff")
		require.Equal(t, []int{0, 1}, attempts["items/005"], "the key without a result retried")
		for _, k := range []string{"items/000", "items/002", "items/003", "items/004"} {
			require.Equal(t, []int{0}, attempts[k], "%s succeeded in the first batch and was not reconciled again", k)
		}
		states := map[string]KeyState{}
		for _, st := range c.Snapshot() {
			states[st.Key] = st
		}
		require.Equal(t, Success, states["items/001"].LastOutcome)
		require.Zero(t, states["items/001"].Retries, "success forgets the backoff")
	})
}

// TestBatchPanicFailsEveryKeyOfTheBatchAndTheControllerGoesOn: a panic in
// ReconcileBatch is recovered as a *PanicError for each of its keys, which
// are retried.
func TestBatchPanicFailsEveryKeyOfTheBatchAndTheControllerGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		rev := putMany(t, s, 3)
		calls := 0
		rec := &batchRecorder{}
		rec.results = func(reqs []Request[*item]) []BatchResult {
			calls++
			if calls == 1 {
				panic("boom")
			}
			return make([]BatchResult, len(reqs))
		}
		c, err := New(s, rec, Options[*item]{Name: "batch", Prefix: "items/", BatchSize: 3})
		require.NoError(t, err)
		stop := start(t, c)
		defer stop()
		require.NoError(t, c.WaitForRevision(t.Context(), rev))
		batches, perKey := rec.seen()
		require.Equal(t, []string{"items/000", "items/001", "items/002"}, batches[0])
		require.Equal(t, map[string]int{"items/000": 2, "items/001": 2, "items/002": 2}, perKey)
	})
}

// TestBatchKeysCarryTheirOwnFencingGuards: under a Sharder each request of
// a batch writes with its own key's guard: a write for a key whose
// ownership was lost is refused while the others land.
func TestBatchKeysCarryTheirOwnFencingGuards(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		raw := store.NewMemory[[]byte]()
		s := store.NewView[*item](raw, store.JSON[*item]{})
		sh := &fakeSharder{epochs: store.NewView[int](raw, store.JSON[int]{}), owned: map[string]ownership{}}
		for _, k := range []string{"items/a", "items/b"} {
			sh.take(t, k)
			put(t, s, k, &item{Want: 1})
		}
		errs := map[string]error{}
		rec := &batchRecorder{}
		rec.results = func(reqs []Request[*item]) []BatchResult {
			out := make([]BatchResult, len(reqs))
			if len(reqs) == 2 && errs["items/a"] == nil {
				// Ownership of b moves while the batch runs: b's write is
				// refused, a's lands.
				sh.lose(t, "items/b")
			}
			for i, req := range reqs {
				_, err := req.Store.Update(context.Background(), req.Key, &item{Want: 1, Seen: 1}, req.Object.Revision)
				if _, ok := errs[req.Key]; !ok {
					errs[req.Key] = err
				}
				out[i].Err = err
			}
			return out
		}
		c, err := New(s, rec, Options[*item]{Name: "batch", Prefix: "items/", BatchSize: 2, Shard: sh})
		require.NoError(t, err)
		stop := start(t, c)
		defer stop()
		synctest.Wait()
		batches, _ := rec.seen()
		require.Equal(t, []string{"items/a", "items/b"}, batches[0])
		require.NoError(t, errs["items/a"])
		require.ErrorIs(t, errs["items/b"], store.ErrGuardFailed)
		b, err := s.Get(t.Context(), "items/b")
		require.NoError(t, err)
		require.Zero(t, b.Value.Seen, "the write of a key no longer owned changed the store")
	})
}

// TestBatchSizeIsValidated: a negative BatchSize, or a BatchSize above 1
// for a reconciler that has no ReconcileBatch, is refused by New.
func TestBatchSizeIsValidated(t *testing.T) {
	s := store.NewMemory[*item]()
	_, err := New(s, &batchRecorder{}, Options[*item]{Name: "x", BatchSize: -1})
	require.ErrorIs(t, err, ErrInvalid)
	_, err = New(s, &recorder{}, Options[*item]{Name: "x", BatchSize: 2})
	require.ErrorIs(t, err, ErrInvalid)
	_, err = New(s, &recorder{}, Options[*item]{Name: "x", BatchSize: 1})
	require.NoError(t, err)
}
