package reconcile

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

func TestPredicatesDropEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "a", &item{Want: 1})
		rec := &recorder{}
		wantChanged := func(old, cur *store.Object[*item]) bool {
			return old == nil || cur == nil || old.Value.Want != cur.Value.Want
		}
		c, err := New(s, rec, Options[*item]{Name: "test", Predicates: []Predicate[*item]{wantChanged}})
		require.NoError(t, err)
		stop := start(t, c)
		synctest.Wait()
		require.Equal(t, 1, rec.count("a"))
		rev := put(t, s, "a", &item{Want: 1, Seen: 1}) // status-only change
		synctest.Wait()
		require.Equal(t, 1, rec.count("a"), "a status-only change was not filtered")
		require.NoError(t, c.WaitForRevision(context.Background(), rev))
		obj, _ := c.Lister().Get("a")
		require.Equal(t, 1, obj.Value.Seen, "the cache must update even when the event is filtered")
		rev = put(t, s, "a", &item{Want: 2, Seen: 1})
		require.NoError(t, c.WaitForRevision(context.Background(), rev))
		require.Equal(t, 2, rec.count("a"))
		stop()
	})
}

// The Lister and its indexes follow the cache: after WaitForRevision(R)
// they reflect every change up to R (a key moved between index values, a
// deletion, a creation), an unknown index is empty, and Revision is R.
func TestListerAndIndexesReflectEveryChangeUpToTheCachesRevision(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "p1", &item{Owner: "rs1"})
		put(t, s, "p2", &item{Owner: "rs2"})
		put(t, s, "p3", &item{Owner: "rs1"})
		byOwner := func(o store.Object[*item]) []string { return []string{o.Value.Owner} }
		c, err := New(s, &recorder{}, Options[*item]{Name: "test", Indexes: map[string]func(store.Object[*item]) []string{"owner": byOwner}})
		require.NoError(t, err)
		stop := start(t, c)
		keys := func(objs []store.Object[*item]) []string {
			var out []string
			for _, o := range objs {
				out = append(out, o.Key)
			}
			return out
		}
		l := c.Lister()
		require.Equal(t, []string{"p1", "p3"}, keys(l.ByIndex("owner", "rs1")))
		rev := put(t, s, "p3", &item{Owner: "rs2"})
		del(t, s, "p1")
		rev = max(rev, put(t, s, "p4", &item{Owner: "rs1"}))
		require.NoError(t, c.WaitForRevision(context.Background(), rev))
		require.Equal(t, []string{"p4"}, keys(l.ByIndex("owner", "rs1")))
		require.Equal(t, []string{"p2", "p3"}, keys(l.ByIndex("owner", "rs2")))
		require.Empty(t, l.ByIndex("missing-index", "x"))
		require.Equal(t, []string{"p2", "p3", "p4"}, keys(l.List()))
		require.Equal(t, rev, c.Health().Revision)
		stop()
	})
}

// A change of a secondary object wakes the primary keys its mapper returns;
// the mapper sees old and new values, so a re-parented child wakes both its
// old and its new owner.
func TestFromStoreWakesOwners(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		primary := store.NewMemory[*item]()
		put(t, primary, "rs1", &item{})
		put(t, primary, "rs2", &item{})
		pods := store.NewMemory[*item]()
		owners := func(old, cur *store.Object[*item]) []string {
			var keys []string
			if old != nil {
				keys = append(keys, old.Value.Owner)
			}
			if cur != nil && !slices.Contains(keys, cur.Value.Owner) {
				keys = append(keys, cur.Value.Owner)
			}
			return keys
		}
		rec := &recorder{}
		c, err := New(primary, rec, Options[*item]{Name: "test", Sources: []Source{FromStore(pods, "", owners)}})
		require.NoError(t, err)
		stop := start(t, c)
		synctest.Wait()
		rec.reset()
		put(t, pods, "pod", &item{Owner: "rs1"})
		synctest.Wait()
		require.Equal(t, 1, rec.count("rs1"))
		require.Equal(t, 0, rec.count("rs2"))
		put(t, pods, "pod", &item{Owner: "rs2"}) // re-parented
		synctest.Wait()
		require.Equal(t, 2, rec.count("rs1"))
		require.Equal(t, 1, rec.count("rs2"))
		del(t, pods, "pod")
		synctest.Wait()
		require.Equal(t, 2, rec.count("rs2"))
		require.Empty(t, c.Health().Degraded)
		stop()
	})
}

func TestFromChannelWakesKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		events := make(chan string)
		rec := &recorder{}
		c, err := New(s, rec, Options[*item]{Name: "test", Sources: []Source{FromChannel(events)}})
		require.NoError(t, err)
		stop := start(t, c)
		events <- "process-exited"
		synctest.Wait()
		require.Equal(t, 1, rec.count("process-exited"))
		close(events) // a closed channel ends the source quietly
		synctest.Wait()
		stop()
	})
}

// A failing source is restarted after a backoff.
func TestFailingSourceIsRestarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		starts := 0
		src := SourceFunc(func(ctx context.Context, enqueue func(string)) error {
			starts++
			if starts < 3 {
				return context.DeadlineExceeded // any error
			}
			enqueue("from-source")
			<-ctx.Done()
			return nil
		})
		rec := &recorder{}
		c, err := New(s, rec, Options[*item]{Name: "test", Sources: []Source{src}})
		require.NoError(t, err)
		stop := start(t, c)
		advance(time.Minute)
		require.Equal(t, 1, rec.count("from-source"))
		stop()
		require.Equal(t, 3, starts)
	})
}

func TestResyncReconcilesEveryKeyAtLowPriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "a", &item{})
		put(t, s, "b", &item{})
		rec := &recorder{}
		c, err := New(s, rec, Options[*item]{Name: "test", ResyncPeriod: time.Minute})
		require.NoError(t, err)
		stop := start(t, c)
		synctest.Wait()
		require.Equal(t, 1, rec.count("a"))
		advance(2*time.Minute + 30*time.Second) // two resyncs (period ±10%)
		require.Equal(t, 3, rec.count("a"))
		require.Equal(t, 3, rec.count("b"))
		stop()
	})
}

// The initial list enters the queue at low priority: a live change made
// while the list is being worked through overtakes it.
func TestLiveChangesOvertakeInitialList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		for _, k := range []string{"l1", "l2", "l3", "l4"} {
			put(t, s, k, &item{})
		}
		first := make(chan struct{})
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			if req.Key == "l1" {
				<-first
			}
			return Result{}, nil
		}}
		c, err := New(s, rec, Options[*item]{Name: "test"})
		require.NoError(t, err)
		stop := start(t, c)
		synctest.Wait() // the only worker is busy with l1
		rev := put(t, s, "live", &item{})
		synctest.Wait()
		close(first)
		require.NoError(t, c.WaitForRevision(context.Background(), rev))
		var order []string
		for _, r := range rec.requests {
			order = append(order, r.Key)
		}
		require.Equal(t, []string{"l1", "live", "l2", "l3", "l4"}, order)
		stop()
	})
}
