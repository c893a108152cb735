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

// requireLedgerHolds checks the ledger's invariants under the
// controller's lock.
func requireLedgerHolds[T any](t *testing.T, c *Controller[T]) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	requireLedgerConsistent(t, c.led)
}

// TestTheLedgerHoldsItsInvariantsWhateverTheOutcomes: whatever the
// outcomes (success, failure, conflict, terminal failure, requeue, panic)
// and whatever changes, deletions and enqueued keys absent from the store
// arrive while reconciles run, the ledger's invariants hold after every
// step (a pending change and its key's record point at each other, error
// texts and failing keys follow their records, no empty record is kept);
// and Inspect's counts agree with Snapshot's throughout.
func TestTheLedgerHoldsItsInvariantsWhateverTheOutcomes(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := store.NewMemory[*item]()
				var mu sync.Mutex
				rng := rand.New(rand.NewPCG(seed, 11))
				pick := func(n int) int {
					mu.Lock()
					defer mu.Unlock()
					return rng.IntN(n)
				}
				rec := ReconcilerFunc[*item](func(ctx context.Context, req Request[*item]) (Result, error) {
					if pick(3) == 0 {
						advance(time.Duration(1+pick(50)) * time.Millisecond)
					}
					switch pick(7) {
					case 0:
						return Result{}, errors.New("failing")
					case 1:
						return Result{}, fmt.Errorf("lost the race: %w", store.ErrConflict)
					case 2:
						return Result{}, Terminal(errors.New("gave up"))
					case 3:
						return Result{RequeueAfter: time.Duration(1+pick(20)) * time.Millisecond}, nil
					case 4:
						panic("reconciler bug")
					}
					return Result{}, nil
				})
				c, err := New(s, rec, Options[*item]{Name: "mirror", Workers: 3})
				require.NoError(t, err)
				for i := range 20 {
					put(t, s, fmt.Sprintf("k%02d", i), &item{})
				}
				stop := start(t, c)
				defer stop()
				for range 300 {
					// Keys come and go, and some are asked for while
					// absent from the store, as a source would.
					key := fmt.Sprintf("k%02d", pick(30))
					_, err := s.Get(context.Background(), key)
					switch {
					case pick(4) == 0:
						c.Enqueue(key)
					case err == nil && pick(3) == 0:
						del(t, s, key)
					default:
						put(t, s, key, &item{})
					}
					advance(time.Duration(pick(10)) * time.Millisecond)
					requireLedgerHolds(t, c)
				}
				synctest.Wait()
				requireLedgerHolds(t, c)
				page := c.Inspect(KeyQuery{Limit: 1000})
				snap := c.Snapshot()
				require.Equal(t, len(snap), page.Matched)
			})
		})
	}
}
