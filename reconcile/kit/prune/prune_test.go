package prune_test

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/prune"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
)

// TestNothingIsPrunedBeforeTheFirstSync: while the controller has not
// listed its store, no pass runs on the interval and one asked for is
// refused with ErrNotSynced, although the world holds an object the
// pruner owns and the store does not want; the first pass after the sync
// prunes it.
func TestNothingIsPrunedBeforeTheFirstSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*db]()
		mine := prune.Mark{Owner: owner, Store: identity(t, s)}
		put(t, s, "dbs/keep")
		w := newWorld(object("dbs/keep", mine), object("dbs/gone", mine))
		c := operator(t, s, w, mine)
		p := newPruner(t, c, s, w, prune.Options{Interval: time.Minute})
		defer start(t, p)()

		<-time.After(10 * time.Minute)
		_, ran := p.Last()
		require.False(t, ran, "a pass ran on the interval before the first sync")
		pass, err := p.Prune(t.Context())
		require.ErrorIs(t, err, prune.ErrRefused)
		require.ErrorIs(t, err, reconcile.ErrNotSynced)
		require.Empty(t, pass.Pruned)
		require.Empty(t, w.deletedNames())

		defer synced(t, c, s)()
		pass, ran = p.Last()
		require.True(t, ran)
		require.NoError(t, pass.Err)
		require.Equal(t, []string{"gone"}, w.deletedNames(), "the first pass after the sync")
	})
}

// TestNothingIsPrunedWhileTheStoreIsDegraded: during a silent outage of
// the controller's store (calls fail, the watch stays open and quiet),
// once the controller reports it degraded, every pass is refused with
// reconcile.ErrDegraded and deletes nothing; once the store serves again,
// the next pass prunes.
func TestNothingIsPrunedWhileTheStoreIsDegraded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := store.NewMemory[*db]()
		s, err := faultstore.New[*db](mem, faultstore.Options{})
		require.NoError(t, err)
		mine := prune.Mark{Owner: owner, Store: identity(t, mem)}
		put(t, s, "dbs/a")
		put(t, s, "dbs/b")
		w := newWorld()
		c := operator(t, s, w, mine)
		defer synced(t, c, s)()
		require.Equal(t, []string{"a", "b"}, w.names())
		p := newPruner(t, c, s, w, prune.Options{Interval: time.Minute})
		defer start(t, p)()

		s.SetOutage(faultstore.Silent)
		del(t, mem, "dbs/b") // the cache cannot see it; the store can
		<-time.After(3 * time.Second)
		require.ErrorIs(t, c.Ready(), reconcile.ErrDegraded)
		for range 5 {
			<-time.After(time.Minute)
			pass, ran := p.Last()
			require.True(t, ran)
			require.ErrorIs(t, pass.Err, prune.ErrRefused)
		}
		pass, err := p.Prune(t.Context())
		require.ErrorIs(t, err, reconcile.ErrDegraded)
		require.Empty(t, pass.Pruned)
		require.Empty(t, w.deletedNames())

		s.SetOutage(faultstore.Up)
		<-time.After(30 * time.Second)
		require.NoError(t, c.Ready())
		_, err = p.Prune(t.Context())
		require.NoError(t, err)
		require.Equal(t, []string{"b"}, w.deletedNames())
	})
}

// TestAPassIsRefusedWhileTheControllerSaysDegradedEvenIfTheStoreAnswers:
// the gate is the controller's word: a store that answers the pruner's
// reads does not overrule a controller that cannot follow it.
func TestAPassIsRefusedWhileTheControllerSaysDegradedEvenIfTheStoreAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*db]()
		mine := prune.Mark{Owner: owner, Store: identity(t, s)}
		put(t, s, "dbs/keep")
		w := newWorld(object("dbs/keep", mine), object("dbs/gone", mine))
		c := &fakeController{}
		c.setReady(reconcile.ErrDegraded)
		p := newPruner(t, c, s, w, prune.Options{})
		defer start(t, p)()
		_, err := p.Prune(t.Context())
		require.ErrorIs(t, err, prune.ErrRefused)
		require.ErrorIs(t, err, reconcile.ErrDegraded)
		require.Empty(t, w.deletedNames())

		c.setReady(nil)
		_, err = p.Prune(t.Context())
		require.NoError(t, err)
		require.Equal(t, []string{"gone"}, w.deletedNames())
	})
}

// TestAnEmptyDesiredSetPrunesNothingUnlessAllowed: an empty store refuses
// the pass with ErrEmpty, reporting what it withheld; with AllowEmpty the
// same world is pruned.
func TestAnEmptyDesiredSetPrunesNothingUnlessAllowed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*db]()
		mine := prune.Mark{Owner: owner, Store: identity(t, s)}
		w := newWorld(object("dbs/a", mine), object("dbs/b", mine))
		c := operator(t, s, w, mine)
		defer synced(t, c, s)()

		p := newPruner(t, c, s, w, prune.Options{})
		stop := start(t, p)
		pass, err := p.Prune(t.Context())
		require.ErrorIs(t, err, prune.ErrRefused)
		require.ErrorIs(t, err, prune.ErrEmpty)
		require.Len(t, pass.World.Prune, 2, "what was withheld")
		require.Empty(t, pass.Pruned)
		require.Equal(t, []string{"a", "b"}, w.names())
		stop()

		p = newPruner(t, c, s, w, prune.Options{AllowEmpty: true})
		defer start(t, p)()
		_, err = p.Prune(t.Context())
		require.NoError(t, err)
		require.Empty(t, w.names())
	})
}

// TestAFreshStoreNeverPrunesObjectsMarkedByTheOldOne: an operator started
// on a fresh store (another identity), empty with AllowEmpty or holding
// other objects, deletes none of the objects it made from the old store,
// and reports them; only objects marked from the fresh store are its own.
func TestAFreshStoreNeverPrunesObjectsMarkedByTheOldOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		old, fresh := store.NewMemory[*db](), store.NewMemory[*db]()
		before := prune.Mark{Owner: owner, Store: identity(t, old)}
		mine := prune.Mark{Owner: owner, Store: identity(t, fresh)}
		require.NotEqual(t, before, mine)
		w := newWorld(object("dbs/a", before), object("dbs/b", before), object("dbs/c", before))
		c := operator(t, fresh, w, mine)
		defer synced(t, c, fresh)()
		p := newPruner(t, c, fresh, w, prune.Options{AllowEmpty: true})
		defer start(t, p)()

		pass, err := p.Prune(t.Context())
		require.NoError(t, err)
		require.Empty(t, pass.Pruned)
		require.Equal(t, 3, pass.World.OtherStore)

		put(t, fresh, "dbs/new")
		put(t, fresh, "dbs/short-lived")
		require.NoError(t, c.WaitForRevision(t.Context(), mustRevision(t, fresh)))
		del(t, fresh, "dbs/short-lived")
		pass, err = p.Prune(t.Context())
		require.NoError(t, err)
		require.Equal(t, []prune.WorldObject{object("dbs/short-lived", mine)}, pass.Pruned)
		require.Equal(t, []string{"a", "b", "c", "new"}, w.names())
	})
}

func mustRevision(t *testing.T, s store.Store[*db]) int64 {
	t.Helper()
	rev, err := s.Revision(t.Context())
	require.NoError(t, err)
	return rev
}

// TestExactlyTheOwnedUndesiredObjectsArePruned: of a world holding objects
// of every kind — its own desired and undesired, unmarked, another
// owner's, from another store, and its own for a key outside its prefix —
// a pass deletes exactly its own undesired ones, and hands none of their
// keys, still undesired, to the controller.
func TestExactlyTheOwnedUndesiredObjectsArePruned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*db]()
		mine := prune.Mark{Owner: owner, Store: identity(t, s)}
		other := prune.Mark{Owner: "someone-else", Store: mine.Store}
		replaced := prune.Mark{Owner: owner, Store: "memory:OLD"}
		put(t, s, "dbs/wanted")
		w := newWorld(
			object("dbs/wanted", mine), object("dbs/gone1", mine), object("dbs/gone2", mine),
			object("dbs/handmade", prune.Mark{}), object("dbs/theirs", other), object("dbs/old", replaced),
			prune.WorldObject{Key: "elsewhere/x", Name: "x", Mark: mine},
		)
		c := &fakeController{}
		p := newPruner(t, c, s, w, prune.Options{})
		defer start(t, p)()

		pass, ran := p.Last() // the pass at the sync
		require.True(t, ran)
		require.NoError(t, pass.Err)
		require.Equal(t, []string{"gone1", "gone2"}, w.deletedNames())
		require.Empty(t, c.enqueued, "keys still undesired")
		require.Equal(t, prune.Selection{Unmarked: 1, OtherOwner: 1, OtherStore: 1, OutOfView: 1, Kept: 1,
			Prune: []prune.WorldObject{object("dbs/gone1", mine), object("dbs/gone2", mine)}}, pass.World)
		require.Equal(t, 1, pass.Desired)
		require.Equal(t, mine.Store, pass.Identity)
	})
}

// TestPassesRunAfterTheSyncOnEveryIntervalAndOnDemand: the first pass
// runs at the sync, the next ones an interval after the previous, and
// Prune runs one at once; Prune without a Run is ErrNotRunning, and a
// second Run at once is ErrAlreadyRunning.
func TestPassesRunAfterTheSyncOnEveryIntervalAndOnDemand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*db]()
		put(t, s, "dbs/a")
		c := &fakeController{}
		w := newWorld()
		var n atomic.Int32
		w.onList = func() { n.Add(1) }
		lists := func() int { return int(n.Load()) }
		p := newPruner(t, c, s, w, prune.Options{Interval: time.Hour})
		_, err := p.Prune(t.Context())
		require.ErrorIs(t, err, prune.ErrNotRunning)

		stop := start(t, p)
		require.ErrorIs(t, p.Run(t.Context()), prune.ErrAlreadyRunning)
		require.Equal(t, 1, lists(), "the pass at the sync")
		<-time.After(time.Hour - time.Second)
		require.Equal(t, 1, lists())
		<-time.After(2 * time.Second)
		require.Equal(t, 2, lists(), "the pass an interval later")
		_, err = p.Prune(t.Context())
		require.NoError(t, err)
		require.Equal(t, 3, lists(), "the pass on demand")
		stop()
		_, err = p.Prune(t.Context())
		require.ErrorIs(t, err, prune.ErrNotRunning)
	})
}

// TestAnObjectMadeWhileTheWorldIsListedIsKept: a key created, and its
// object made by the operator, while the pass lists the world is in the
// desired set the pass reads afterwards: its object is not pruned.
func TestAnObjectMadeWhileTheWorldIsListedIsKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*db]()
		mine := prune.Mark{Owner: owner, Store: identity(t, s)}
		put(t, s, "dbs/a")
		w := newWorld()
		c := operator(t, s, w, mine)
		defer synced(t, c, s)()
		w.onList = func() {
			w.onList = nil
			put(t, s, "dbs/new")
			require.NoError(t, c.WaitForRevision(t.Context(), mustRevision(t, s)))
		}
		p := newPruner(t, c, s, w, prune.Options{})
		defer start(t, p)()
		pass, err := p.Prune(t.Context())
		require.NoError(t, err)
		require.Equal(t, 2, pass.World.Kept)
		require.Empty(t, pass.World.Prune)
		require.Empty(t, w.deletedNames())
		require.Equal(t, []string{"a", "new"}, w.names())
	})
}

// TestAKeyDesiredAgainWhileItsObjectIsPrunedGetsItsObjectBack: a key
// created again after the desired set was read, and reconciled before the
// pruner deletes its object, is reconciled again after the delete, so its
// object is made again.
func TestAKeyDesiredAgainWhileItsObjectIsPrunedGetsItsObjectBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*db]()
		mine := prune.Mark{Owner: owner, Store: identity(t, s)}
		put(t, s, "dbs/a")
		w := newWorld(object("dbs/back", mine))
		c := operator(t, s, w, mine)
		defer synced(t, c, s)()
		w.onDelete = func() {
			w.onDelete = nil
			put(t, s, "dbs/back")
			require.NoError(t, c.WaitForRevision(t.Context(), mustRevision(t, s)))
		}
		p := newPruner(t, c, s, w, prune.Options{})
		defer start(t, p)()
		pass, ran := p.Last() // the pass at the sync
		require.True(t, ran)
		require.NoError(t, pass.Err)
		require.Len(t, pass.Pruned, 1)
		synctest.Wait()
		require.Equal(t, []string{"a", "back"}, w.names(), "the object of the key desired again was not made again")
	})
}

// TestOnlyAKeyCreatedAgainIsHandedBackToTheController: after its deletes,
// the pass hands the controller the keys created again meanwhile, and
// only them: a key still deleted, reconciled from a cache that has not
// yet seen its deletion, would have its object made again.
func TestOnlyAKeyCreatedAgainIsHandedBackToTheController(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*db]()
		mine := prune.Mark{Owner: owner, Store: identity(t, s)}
		put(t, s, "dbs/keep")
		w := newWorld(object("dbs/gone", mine), object("dbs/again", mine))
		w.onDelete = func() {
			w.onDelete = nil // the first delete, of "again" (world order)
			put(t, s, "dbs/again")
		}
		c := &fakeController{}
		p := newPruner(t, c, s, w, prune.Options{})
		defer start(t, p)()
		pass, _ := p.Last()
		require.NoError(t, pass.Err)
		require.Len(t, pass.Pruned, 2)
		require.Equal(t, []string{"dbs/again"}, c.enqueued)
	})
}
