package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
)

// countingMemory is the memory store with its lists counted; its watch
// and its Diff are the memory store's own.
type countingMemory struct {
	*store.Memory[*item]
	lists atomic.Int64
}

func (c *countingMemory) List(ctx context.Context, prefix string) ([]store.Object[*item], int64, error) {
	c.lists.Add(1)
	return c.Memory.List(ctx, prefix)
}

// TestACacheOutrunByRandomWritesCatchesUpToTheStoreWithoutReListing: over
// memory stores with small random histories and watch lags, random
// creates, updates, deletes and re-creates, in bursts the cache cannot
// keep up with, leave the cache equal to the store, listed once; the
// changes told to the hooks, applied in order, give the store's state;
// and each removal told carries the last value the hooks were told of
// its key (a delete learned by difference is a removal, as a watched
// one is).
func TestACacheOutrunByRandomWritesCatchesUpToTheStoreWithoutReListing(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { catchUpTrial(t, seed) })
		})
	}
}

func catchUpTrial(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 41))
	s := &countingMemory{Memory: store.NewMemory[*item](
		store.WithHistory(4+rng.IntN(28)), store.WithWatchLag(1+rng.IntN(8)))}
	defer s.Close()
	var mu sync.Mutex
	told := map[string]store.Object[*item]{} // what the hooks were told, applied in order
	var bad []string
	c := New[*item](s, Options[*item]{Tombstones: true, Hooks: Hooks[*item]{Changed: func(changes []Change[*item]) {
		mu.Lock()
		defer mu.Unlock()
		for _, ch := range changes {
			last, had := told[ch.Key()]
			switch {
			case ch.HasCur:
				told[ch.Key()] = ch.Cur
			case !had || last.Value != ch.Old.Value:
				bad = append(bad, fmt.Sprintf("removal of %s without its last value", ch.Key()))
			default:
				delete(told, ch.Key())
			}
		}
	}}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	<-c.Synced()
	live := map[string]int64{}
	for i := range 400 {
		k := fmt.Sprintf("k%02d", rng.IntN(25))
		rev, ok := live[k]
		switch {
		case !ok:
			obj, err := s.Create(ctx, k, &item{Want: i})
			require.NoError(t, err)
			live[k] = obj.Revision
		case rng.IntN(3) == 0:
			_, err := s.Delete(ctx, k, rev)
			require.NoError(t, err)
			delete(live, k)
		default:
			obj, err := s.Update(ctx, k, &item{Want: i}, rev)
			require.NoError(t, err)
			live[k] = obj.Revision
		}
		if rng.IntN(60) == 0 {
			synctest.Wait() // let the cache catch up, between bursts
		}
	}
	rev, err := s.Revision(ctx)
	require.NoError(t, err)
	require.NoError(t, c.WaitRevision(ctx, rev))
	synctest.Wait()
	cached := map[string]int64{}
	for _, obj := range c.List() {
		cached[obj.Key] = obj.Revision
	}
	require.Equal(t, live, cached, "the cache holds what the store holds")
	mu.Lock()
	require.Empty(t, bad)
	toldRevs := map[string]int64{}
	for k, obj := range told {
		toldRevs[k] = obj.Revision
	}
	mu.Unlock()
	require.Equal(t, live, toldRevs, "the hooks were told the store's state")
	require.EqualValues(t, 1, s.lists.Load(), "listed once")
	cancel()
	<-done
}
