package drift_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/drift"
)

// A database the reconciler made (and said so) and
// someone dropped within one poll interval is absent at both polls, and
// woken by the second all the same.
func TestAnObjectMadeAndDroppedBetweenTwoPollsIsWokenByTheNextPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, k := newWorld(nil), &woken{}
		src := newSource(t, w.list, drift.Options{})
		stop := run(src, k)
		synctest.Wait()
		w.set("dbs/app", "owner=app") // made by the reconciler
		src.Reconciled("dbs/app", "owner=app")
		w.remove("dbs/app") // dropped by hand
		poll()
		require.Equal(t, []string{"dbs/app"}, k.take())
		w.set("dbs/app", "owner=app") // made again
		src.Reconciled("dbs/app", "owner=app")
		poll()
		require.Empty(t, k.take(), "what the reconciler made wakes nothing")
		require.NoError(t, stop())
	})
}

// A report made while a poll lists is newer than what that poll lists:
// the poll may wake its key once more, but does not take its stale
// listing as what is expected, so a hand change back to that listing is
// still found.
func TestAReportWhileAPollListsIsNotOverwrittenByItsListing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, k := newWorld(map[string]string{"dbs/app": "owner=ops"}), &woken{}
		listed, resume := make(chan struct{}), make(chan struct{})
		var hold atomic.Bool
		list := func(ctx context.Context) ([]drift.Observed, error) {
			objs, err := w.list(ctx)
			if hold.Load() {
				listed <- struct{}{}
				<-resume
			}
			return objs, err
		}
		src := newSource(t, list, drift.Options{})
		stop := run(src, k)
		synctest.Wait()
		hold.Store(true)
		advance(time.Minute) // the poll lists owner=ops, and waits
		<-listed
		w.set("dbs/app", "owner=app") // the reconciler's change, reported
		src.Reconciled("dbs/app", "owner=app")
		hold.Store(false)
		resume <- struct{}{}
		synctest.Wait()
		require.Equal(t, []string{"dbs/app"}, k.take(), "one needless wake-up at most")
		w.set("dbs/app", "owner=ops") // by hand: what the stale listing held
		poll()
		require.Equal(t, []string{"dbs/app"}, k.take(), "found all the same")
		require.NoError(t, stop())
	})
}

// Reconciled takes a key's objects in any order, as a listing of them,
// and none for a key with no object.
func TestReconciledTakesAKeysObjectsInAnyOrderAndNoneForNoObject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		listing := []drift.Observed{{"dbs/app", "owner=app"}, {"dbs/app", "grant=ro"}}
		list := func(context.Context) ([]drift.Observed, error) {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(listing), nil
		}
		k := &woken{}
		src := newSource(t, list, drift.Options{})
		stop := run(src, k)
		synctest.Wait()
		src.Reconciled("dbs/app", "grant=ro", "owner=app")
		src.Reconciled("dbs/gone")
		poll()
		require.Empty(t, k.take())
		src.Reconciled("dbs/app", "owner=app")
		poll()
		require.Equal(t, []string{"dbs/app"}, k.take(), "the grant was not reported")
		var none *drift.Source
		none.Reconciled("dbs/app", "owner=app") // does nothing
		require.NoError(t, stop())
	})
}
