package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// TestDeletedRequestCarriesLastValueWhileTheRemovalIsApplied reconciles a
// key in the window between the cache dropping it and the controller
// hearing of the removal (held open by a predicate): the Deleted request
// must still carry the last value.
func TestDeletedRequestCarriesLastValueWhileTheRemovalIsApplied(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "a", &item{Want: 7})
		inWindow, release := make(chan struct{}), make(chan struct{})
		rec := &recorder{}
		c := newTxnController(t, s, rec, Options[*item]{Predicates: []Predicate[*item]{
			func(old, cur *store.Object[*item]) bool {
				if cur == nil {
					close(inWindow)
					<-release
				}
				return true
			},
		}})
		defer start(t, c)()
		synctest.Wait()
		del(t, s, "a")
		<-inWindow
		c.Enqueue("a") // another source wakes the key right now
		synctest.Wait()
		req, ok := rec.last("a")
		require.True(t, ok)
		require.True(t, req.Deleted)
		require.Equal(t, "a", req.Object.Key, "a Deleted request lost the key's last value")
		require.NotNil(t, req.Object.Value)
		require.Equal(t, 7, req.Object.Value.Want)
		close(release)
	})
}

// TestDeletedRequestsCarryLastValuesUnderChurn creates and deletes many
// keys while several workers reconcile them.
func TestDeletedRequestsCarryLastValuesUnderChurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		var bad []string
		var mu sync.Mutex
		// gone marks keys whose deletion was reconciled with its last
		// value: a tombstone may go then, so a later wake-up of the key
		// before it is created again may carry none.
		gone := map[string]bool{}
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			mu.Lock()
			defer mu.Unlock()
			empty := req.Object.Key != req.Key || req.Object.Value == nil
			switch {
			case req.Deleted && empty && !gone[req.Key]:
				bad = append(bad, req.Key)
			case req.Deleted && !empty:
				gone[req.Key] = true
			case !req.Deleted:
				gone[req.Key] = false
			}
			return Result{}, nil
		}}
		c := newTxnController(t, s, rec, Options[*item]{Workers: 8})
		defer start(t, c)()
		var rev int64
		for i := range 500 {
			key := fmt.Sprint("k", i%50)
			if _, err := s.Get(context.Background(), key); err == nil {
				rev = del(t, s, key)
			} else {
				rev = put(t, s, key, &item{Want: i})
			}
		}
		require.NoError(t, c.WaitForRevision(context.Background(), rev))
		synctest.Wait() // hand-outs queued again meanwhile are done too
		mu.Lock()
		defer mu.Unlock()
		require.Empty(t, bad, "Deleted requests without the last value")
		require.Zero(t, c.cache.TombstoneCount(), "tombstones outlived their reconciled deletions")
	})
}

// TestConflictReconcilesTheNewerObjectAtOnceDespitePredicates: a status
// write conflicts with another writer's status-only change, which a
// "generation changed" predicate filters out; the key must be reconciled
// again as soon as the newer object is in the cache, not a second later.
func TestConflictReconcilesTheNewerObjectAtOnceDespitePredicates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTxnStore()
		s.txn(write{"a", &item{Want: 1}})
		first := make(chan struct{})
		var once sync.Once
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			var err error
			once.Do(func() {
				s.pauseWatches(true) // the other writer's change reaches us late
				other := *req.Object.Value
				other.Owner = "someone else" // status only
				_, err = s.Update(ctx, req.Key, &other, req.Object.Revision)
				require.NoError(t, err)
				next := *req.Object.Value
				next.Seen = next.Want
				_, err = s.Update(ctx, req.Key, &next, req.Object.Revision)
				close(first)
			})
			return Result{}, err
		}}
		specChanged := func(old, cur *store.Object[*item]) bool {
			return old == nil || cur == nil || old.Value.Want != cur.Value.Want
		}
		c := newTxnController(t, s, rec, Options[*item]{Predicates: []Predicate[*item]{specChanged}})
		defer start(t, c)()
		<-first
		synctest.Wait() // the conflict is handled; nothing newer in the cache yet
		require.Equal(t, 1, rec.count("a"))
		s.pauseWatches(false)
		synctest.Wait() // no time passes
		require.Equal(t, 2, rec.count("a"), "the conflicted key waited for a timer instead of the newer object")
		req, _ := rec.last("a")
		require.Equal(t, "someone else", req.Object.Value.Owner)
	})
}

// TestAConflictOverTheControllersOwnWriteWaitsForTheNewerObject: a
// reconcile handed the controller's own write (the cache lagging behind
// it) whose write conflicts with another writer's is not reconciled again
// at once, which would hand it the same object to conflict again for as
// long as the cache lags: it waits for the newer object, whose arrival
// wakes it.
func TestAConflictOverTheControllersOwnWriteWaitsForTheNewerObject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTxnStore()
		s.txn(write{"a", &item{Want: 1}})
		var mu sync.Mutex
		conflicts := 0
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			mu.Lock()
			defer mu.Unlock()
			if conflicts == 10 {
				return Result{}, nil // a loop of conflicts: end it, to fail below
			}
			_, err := writeSeen(ctx, req)
			if errors.Is(err, store.ErrConflict) {
				conflicts++
			}
			return Result{}, err
		}}
		c := newTxnController(t, s, rec, Options[*item]{})
		defer start(t, c)()
		synctest.Wait() // the first reconcile's write is cached
		s.pauseWatches(true)
		require.NoError(t, c.Enqueue("a"))
		synctest.Wait() // the second's is not: the next reconcile is handed it
		s.txn(write{"a", &item{Want: 1, Seen: 2, Owner: "someone else"}})
		require.NoError(t, c.Enqueue("a"))
		synctest.Wait() // no time passes
		mu.Lock()
		require.Equal(t, 1, conflicts, "the conflicted key was handed the same object again and again")
		mu.Unlock()
		s.pauseWatches(false)
		synctest.Wait()
		req, _ := rec.last("a")
		require.Equal(t, "someone else", req.Object.Value.Owner)
		require.Equal(t, 4, rec.count("a"))
	})
}

// TestRetryScheduledInOneRunSurvivesTheNext: a key woken by a source other
// than the store fails, and the run ends (a term of leadership ends)
// before its retry is due; the next run retries it.
func TestRetryScheduledInOneRunSurvivesTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		fails := 1
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			if fails > 0 {
				fails--
				return Result{}, errors.New("the world is not ready")
			}
			return Result{}, nil
		}}
		c := newTxnController(t, s, rec, Options[*item]{})
		stop := start(t, c)
		c.Enqueue("world/w")
		synctest.Wait()
		require.Equal(t, 1, rec.count("world/w"))
		stop()

		stop = start(t, c)
		defer stop()
		advance(time.Minute)
		require.Equal(t, 2, rec.count("world/w"), "the retry scheduled in the previous run was lost")
		require.Empty(t, c.Snapshot(), "records outlived a key that converged and is gone")
	})
}

// TestRecordsFollowKeysAliveAcrossManyRuns churns unique keys (create,
// fail, delete, terminal failures, panics) while the controller is stopped
// and started again hundreds of times, as a leader-only controller is on
// every change of leadership: in the end no per-key record is left.
func TestRecordsFollowKeysAliveAcrossManyRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		var mu sync.Mutex
		calls := map[string]int{}
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			mu.Lock()
			calls[req.Key]++
			n := calls[req.Key]
			mu.Unlock()
			switch {
			case n <= 2 && len(req.Key)%3 == 0:
				return Result{}, errors.New("transient")
			case n == 1 && len(req.Key)%3 == 1 && req.Deleted:
				return Result{}, Terminal(errors.New("cannot tear down"))
			case n == 3 && len(req.Key)%4 == 0:
				panic("reconciler bug")
			}
			return Result{}, nil
		}}
		c := newTxnController(t, s, rec, Options[*item]{Workers: 4})
		for run := range 300 {
			stop := start(t, c)
			key := fmt.Sprintf("key-%d", run)
			put(t, s, key, &item{Want: run})
			if run%2 == 1 {
				c.Enqueue(fmt.Sprintf("world-%d", run))
			}
			advance(time.Duration(run%3) * time.Millisecond)
			del(t, s, key)
			if run%4 == 0 {
				synctest.Wait()
			}
			stop()
		}
		stop := start(t, c)
		advance(10 * time.Minute)
		rev, _ := s.Revision(context.Background())
		require.NoError(t, c.WaitForRevision(context.Background(), rev))
		advance(10 * time.Minute)
		stop()
		require.Empty(t, c.Snapshot(), "per-key records outlived their keys")
		c.mu.Lock()
		require.Empty(t, c.led.pend)
		c.led.recs.each(func(r *record) { require.False(t, r.has(conflicted), r.key) })
		c.mu.Unlock()
		require.Zero(t, c.cache.TombstoneCount())
	})
}

func TestNewRefusesTypedNilReconcilerAndStore(t *testing.T) {
	var rec *recorder
	_, err := New[*item](store.NewMemory[*item](), rec, Options[*item]{Name: "x"})
	require.ErrorIs(t, err, ErrInvalid)
	var fn ReconcilerFunc[*item]
	_, err = New[*item](store.NewMemory[*item](), fn, Options[*item]{Name: "x"})
	require.ErrorIs(t, err, ErrInvalid)
	var s *store.Memory[*item]
	_, err = New[*item](s, &recorder{}, Options[*item]{Name: "x"})
	require.ErrorIs(t, err, ErrInvalid)
}
