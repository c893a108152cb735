package reconcile

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
)

// scripted is a BatchReconciler whose answer for a key's n-th reconcile is
// the n-th step of the key's script (the last step repeats), through
// Reconcile or ReconcileBatch alike. It records the retries count of each
// reconcile of each key.
type scripted struct {
	scripts  map[string][]BatchResult
	mu       sync.Mutex
	attempts map[string][]int
}

func (s *scripted) Reconcile(_ context.Context, req Request[*item]) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	steps := s.scripts[req.Key]
	n := len(s.attempts[req.Key])
	s.attempts[req.Key] = append(s.attempts[req.Key], req.Retries)
	if len(steps) == 0 {
		return Result{}, nil
	}
	step := steps[min(n, len(steps)-1)]
	return step.Result, step.Err
}

func (s *scripted) ReconcileBatch(ctx context.Context, reqs []Request[*item]) []BatchResult {
	out := make([]BatchResult, len(reqs))
	for i, req := range reqs {
		out[i].Result, out[i].Err = s.Reconcile(ctx, req)
	}
	return out
}

// ctxBatcher is a BatchReconciler that records the keys of its batches
// and answers each with fn, given the call's context.
type ctxBatcher struct {
	mu      sync.Mutex
	batches [][]string
	fn      func(ctx context.Context, reqs []Request[*item]) []BatchResult
}

func (b *ctxBatcher) Reconcile(ctx context.Context, req Request[*item]) (Result, error) {
	out := b.ReconcileBatch(ctx, []Request[*item]{req})
	return out[0].Result, out[0].Err
}

func (b *ctxBatcher) ReconcileBatch(ctx context.Context, reqs []Request[*item]) []BatchResult {
	keys := make([]string, len(reqs))
	for i, r := range reqs {
		keys[i] = r.Key
	}
	b.mu.Lock()
	b.batches = append(b.batches, keys)
	b.mu.Unlock()
	return b.fn(ctx, reqs)
}

func (b *ctxBatcher) seen() [][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.batches
}

// randomScripts gives each of n keys a script of one to four steps, drawn
// from every way a reconcile of one key ends (a panic fails a whole batch,
// so it is left out), whose last step ends the key's reconciles: a success
// or a terminal failure.
func randomScripts(rng *rand.Rand, n int) map[string][]BatchResult {
	failing := []BatchResult{
		{Err: errors.New("flaky")},
		{Result: Result{Requeue: true}},
		{Result: Result{RequeueAfter: time.Second}},
		{Err: fmt.Errorf("status: %w", store.ErrConflict)},
		{Err: fmt.Errorf("not a declared dependency: %w", errors.New("x"))},
		{Result: Result{RequeueAfter: 2 * time.Second}, Err: errors.New("flaky, with a hint")},
	}
	last := []BatchResult{{}, {Err: Terminal(errors.New("bad spec"))}}
	scripts := map[string][]BatchResult{}
	for i := range n {
		steps := make([]BatchResult, rng.IntN(4))
		for j := range steps {
			steps[j] = failing[rng.IntN(len(failing))]
		}
		scripts[fmt.Sprintf("items/%03d", i)] = append(steps, last[rng.IntN(len(last))])
	}
	return scripts
}

// handOutEnds is what a run of scripts leaves behind: each key's retries
// count at each reconcile, and how its last reconcile ended.
type handOutEnds struct {
	attempts map[string][]int
	last     map[string]KeyState
}

// runScripts runs scripts over a controller with batchSize (1: each key
// alone), under a Sharder that owns the keys of owned only, until every
// key's script has ended.
func runScripts(t *testing.T, scripts map[string][]BatchResult, owned map[string]bool, batchSize int) handOutEnds {
	var ends handOutEnds
	synctest.Test(t, func(t *testing.T) {
		raw := store.NewMemory[[]byte]()
		s := store.NewView[*item](raw, store.JSON[*item]{})
		sh := &fakeSharder{epochs: store.NewView[int](raw, store.JSON[int]{}), owned: map[string]ownership{}}
		for key := range scripts {
			if owned[key] {
				sh.take(t, key)
			}
			put(t, s, key, &item{Want: 1})
		}
		rec := &scripted{scripts: scripts, attempts: map[string][]int{}}
		c, err := New(s, rec, Options[*item]{Name: "scripted", Prefix: "items/", Workers: 2, BatchSize: batchSize, Shard: sh})
		require.NoError(t, err)
		stop := start(t, c)
		<-time.After(time.Minute) // longer than any script's backoffs
		synctest.Wait()
		ends.last = map[string]KeyState{}
		for _, st := range c.Snapshot() {
			ends.last[st.Key] = KeyState{LastOutcome: st.LastOutcome, LastError: st.LastError, Retries: st.Retries, State: st.State}
		}
		stop()
		rec.mu.Lock()
		ends.attempts = rec.attempts
		rec.mu.Unlock()
	})
	return ends
}

// TestAKeyIsHandedOutAndEndedAlikeAloneOrInABatch: whatever its reconciles
// return, a key reconciled in batches is claimed, retried, backed off and
// recorded as if it had been reconciled alone (its retries count at each
// reconcile, its last outcome and error, its backoff), and a key another
// replica owns is reconciled on neither path.
func TestAKeyIsHandedOutAndEndedAlikeAloneOrInABatch(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 38))
			scripts := randomScripts(rng, 24)
			owned := map[string]bool{}
			for key := range scripts {
				owned[key] = rng.IntN(4) > 0
			}
			alone := runScripts(t, scripts, owned, 1)
			batched := runScripts(t, scripts, owned, 4)
			for key, steps := range scripts {
				if !owned[key] {
					require.Empty(t, alone.attempts[key], "%s, owned elsewhere, was reconciled", key)
					require.Empty(t, batched.attempts[key], "%s, owned elsewhere, was reconciled in a batch", key)
					continue
				}
				require.GreaterOrEqual(t, len(alone.attempts[key]), len(steps), "%s did not run its script", key)
				require.Equal(t, alone.attempts[key], batched.attempts[key], "%s: the retries of each reconcile", key)
				require.Equal(t, alone.last[key], batched.last[key], "%s: how it ended", key)
			}
		})
	}
}

// TestABatchsContextEndsWhenTheOwnershipOfAnyOfItsKeysEnds: under a
// Sharder, the context of a ReconcileBatch call ends the moment this
// replica loses any of the batch's keys; each key is then retried on its
// own account, and the key lost is no longer reconciled here.
func TestABatchsContextEndsWhenTheOwnershipOfAnyOfItsKeysEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		raw := store.NewMemory[[]byte]()
		s := store.NewView[*item](raw, store.JSON[*item]{})
		sh := &fakeSharder{epochs: store.NewView[int](raw, store.JSON[int]{}), owned: map[string]ownership{}}
		for _, k := range []string{"items/a", "items/b"} {
			sh.take(t, k)
			put(t, s, k, &item{Want: 1})
		}
		entered := make(chan struct{})
		var once sync.Once
		rec := &ctxBatcher{fn: func(ctx context.Context, reqs []Request[*item]) []BatchResult {
			out := make([]BatchResult, len(reqs))
			if len(reqs) == 2 {
				once.Do(func() { close(entered) })
				select {
				case <-ctx.Done():
				case <-time.After(time.Minute): // the ownership's end was missed
				}
				for i := range out {
					out[i].Err = ctx.Err()
				}
			}
			return out
		}}
		c, err := New(s, rec, Options[*item]{Name: "batch", Prefix: "items/", BatchSize: 2, Shard: sh})
		require.NoError(t, err)
		stop := start(t, c)
		defer stop()
		<-entered
		sh.lose(t, "items/b")
		<-time.After(time.Second)
		synctest.Wait()
		require.Equal(t, [][]string{{"items/a", "items/b"}, {"items/a"}}, rec.seen(),
			"the batch did not end with the ownership of b, or b was reconciled after its loss")
	})
}

// TestABatchsTimeoutBoundsTheWholeCall: Options.Timeout ends the context
// of a ReconcileBatch call, and every key of the batch is retried.
func TestABatchsTimeoutBoundsTheWholeCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		rev := putMany(t, s, 3)
		var timedOut []error
		var waited time.Duration
		rec := &ctxBatcher{fn: func(ctx context.Context, reqs []Request[*item]) []BatchResult {
			out := make([]BatchResult, len(reqs))
			if timedOut == nil {
				begun := time.Now()
				select {
				case <-ctx.Done():
				case <-time.After(time.Minute): // the timeout was missed
				}
				waited = time.Since(begun)
				for i := range out {
					out[i].Err = ctx.Err()
					timedOut = append(timedOut, out[i].Err)
				}
			}
			return out
		}}
		c, err := New(s, rec, Options[*item]{Name: "batch", Prefix: "items/", BatchSize: 3, Timeout: 5 * time.Second})
		require.NoError(t, err)
		stop := start(t, c)
		defer stop()
		require.NoError(t, c.WaitForRevision(t.Context(), rev))
		require.Equal(t, 5*time.Second, waited, "the batch's context did not end at its timeout")
		require.Len(t, timedOut, 3)
		for _, err := range timedOut {
			require.ErrorIs(t, err, context.DeadlineExceeded)
		}
		perKey := map[string]int{}
		for _, batch := range rec.seen() {
			for _, k := range batch {
				perKey[k]++
			}
		}
		require.Equal(t, map[string]int{"items/000": 2, "items/001": 2, "items/002": 2}, perKey,
			"each key of the timed-out batch is retried once")
	})
}
