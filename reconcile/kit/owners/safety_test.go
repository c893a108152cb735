package owners_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/owners"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/faultstore"
)

// failing returns a Plan that fails the calls of ops while on is true.
func failing(on *atomic.Bool, ops faultstore.Op, key string) faultstore.Plan {
	return func(c faultstore.Call) faultstore.Decision {
		if on.Load() && c.Op&ops != 0 && (key == "" || c.Key == key) {
			return faultstore.Decision{Fault: faultstore.Fail}
		}
		return faultstore.Decision{}
	}
}

// TestNothingIsCollectedBeforeTheFirstSync: a collector that cannot list
// the store deletes nothing, though the child it would collect can be
// read and deleted; once the list succeeds, it collects.
func TestNothingIsCollectedBeforeTheFirstSync(t *testing.T) {
	each(t, func(t *testing.T, w world) {
		w.create(t, "rs/web", nil)
		w.create(t, "pods/a", nil, w.ref(t, "rs/web", true))
		w.remove(t, "rs/web", apistore.Background)
		var down atomic.Bool
		down.Store(true)
		w.faults().SetPlan(failing(&down, faultstore.OpList|faultstore.OpWatch, ""))

		r := w.start(t, owners.CollectorOptions{})
		<-time.After(time.Minute)
		w.settle(t)
		require.True(t, has(t, w, "pods/a"), "a child was collected before the first list")
		require.ErrorIs(t, r.Ready(), reconcile.ErrNotSynced)

		down.Store(false)
		<-time.After(time.Minute) // the list's next try
		w.settle(t)
		require.NoError(t, r.Ready())
		require.Empty(t, w.keys(t))
	})
}

// TestNothingIsCollectedWhileTheStoreIsUnreachable: while the store is out
// of the collector's reach (a silent outage: calls fail, the watch stays
// open and says nothing), an owner deleted by another program does not
// make the collector delete anything; it reports itself degraded, and
// collects once the store is back.
func TestNothingIsCollectedWhileTheStoreIsUnreachable(t *testing.T) {
	each(t, func(t *testing.T, w world) {
		r := w.start(t, owners.CollectorOptions{})
		w.create(t, "rs/web", nil)
		w.create(t, "pods/a", nil, w.ref(t, "rs/web", true))
		w.create(t, "pods/b", nil, w.ref(t, "rs/web", false))
		w.settle(t)

		w.faults().SetOutage(faultstore.Silent)
		w.remove(t, "rs/web", apistore.Background)
		<-time.After(time.Minute)
		w.settle(t)
		require.Equal(t, []string{"pods/a", "pods/b"}, w.keys(t))
		require.ErrorIs(t, r.Ready(), reconcile.ErrDegraded)
		require.NotEmpty(t, r.Health().Degraded)

		w.faults().SetOutage(faultstore.Up)
		<-time.After(time.Minute)
		w.settle(t)
		require.NoError(t, r.Ready())
		require.Empty(t, w.keys(t))
	})
}

// TestAnOwnerThatCannotBeReadIsNotGone: an owner the cache has seen go is
// read from the store before its children are deleted; while that read
// fails, though every other call succeeds, the children stay, and they go
// once it succeeds.
func TestAnOwnerThatCannotBeReadIsNotGone(t *testing.T) {
	each(t, func(t *testing.T, w world) {
		w.start(t, owners.CollectorOptions{})
		w.create(t, "rs/web", nil)
		w.create(t, "pods/a", nil, w.ref(t, "rs/web", true))
		w.settle(t)
		var down atomic.Bool
		down.Store(true)
		w.faults().SetPlan(failing(&down, faultstore.OpGet, "rs/web"))

		w.remove(t, "rs/web", apistore.Background)
		for range 3 {
			w.settle(t)
			require.True(t, has(t, w, "pods/a"), "a child of an owner that could not be read was collected")
			<-time.After(time.Minute) // the next tries
		}

		down.Store(false)
		<-time.After(time.Minute)
		w.settle(t)
		require.Empty(t, w.keys(t))
	})
}

// TestNothingIsCollectedWhileTheCollectorIsDegraded: a collector whose
// cache cannot follow the store (its watch and lists refused) deletes
// nothing, even a child it has every reason to collect and could delete
// (reads and writes of keys succeed): its retries wait until it follows
// the store again.
func TestNothingIsCollectedWhileTheCollectorIsDegraded(t *testing.T) {
	each(t, func(t *testing.T, w world) {
		// Retries wait longer than the collector takes to see it is
		// degraded (two heartbeats of two seconds, over HTTP too).
		r := w.start(t, owners.CollectorOptions{RateLimiter: queue.NewExponential[string](10*time.Second, time.Minute, 0)})
		w.create(t, "rs/web", nil)
		w.create(t, "pods/a", nil, w.ref(t, "rs/web", true))
		w.settle(t)
		var ownerDown, cacheDown atomic.Bool
		ownerRead := failing(&ownerDown, faultstore.OpGet, "rs/web")
		following := failing(&cacheDown, faultstore.OpList|faultstore.OpWatch|faultstore.OpRevision, "")
		w.faults().SetPlan(func(c faultstore.Call) faultstore.Decision {
			if d := ownerRead(c); d.Fault != faultstore.None {
				return d
			}
			return following(c)
		})

		ownerDown.Store(true)
		w.remove(t, "rs/web", apistore.Background)
		w.settle(t) // pods/a's judgement failed: it is retried after a backoff
		require.True(t, has(t, w, "pods/a"))
		cacheDown.Store(true)
		w.faults().(interface{ BreakWatches() }).BreakWatches()
		ownerDown.Store(false)
		<-time.After(5 * time.Second)
		w.settle(t)
		require.ErrorIs(t, r.Ready(), reconcile.ErrDegraded)
		<-time.After(time.Minute)
		w.settle(t)
		require.True(t, has(t, w, "pods/a"), "a degraded collector deleted a child")

		cacheDown.Store(false)
		<-time.After(2 * time.Minute) // the retry's backoff, a minute at most
		w.settle(t)
		require.Empty(t, w.keys(t))
	})
}
