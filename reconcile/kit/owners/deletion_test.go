package owners_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/owners"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/faultstore"
)

var hold = []string{holdFinalizer}

// TestABackgroundDeletionCollectsTheChildrenAndTheirChildren: nothing is
// collected while its owners live; once the owner is deleted, its
// children go, and then theirs, blocking or not; objects owned by no one
// stay.
func TestABackgroundDeletionCollectsTheChildrenAndTheirChildren(t *testing.T) {
	each(t, func(t *testing.T, w world) {
		w.start(t, owners.CollectorOptions{})
		w.create(t, "rs/web", nil)
		w.create(t, "pods/a", nil, w.ref(t, "rs/web", false))
		w.create(t, "pods/b", nil, w.ref(t, "rs/web", true))
		w.create(t, "vols/a", nil, w.ref(t, "pods/a", true))
		w.create(t, "other", nil)
		w.settle(t)
		require.Equal(t, []string{"other", "pods/a", "pods/b", "rs/web", "vols/a"}, w.keys(t))

		require.False(t, w.remove(t, "rs/web", apistore.Background))
		w.settle(t)
		require.Equal(t, []string{"other"}, w.keys(t))
	})
}

// TestAForegroundDeletionKeepsTheOwnerMarkedUntilItsBlockingChildrenAreGone:
// the owner stays marked while a blocking child is there; the children are
// deleted in the foreground too, so a child waits for its own blocking
// children; a child's own finalizer holds it, and its owner with it; the
// deletions happen bottom up.
func TestAForegroundDeletionKeepsTheOwnerMarkedUntilItsBlockingChildrenAreGone(t *testing.T) {
	each(t, func(t *testing.T, w world) {
		w.start(t, owners.CollectorOptions{})
		w.create(t, "rs/web", nil)
		w.create(t, "pods/a", hold, w.ref(t, "rs/web", true))
		w.create(t, "pods/b", nil, w.ref(t, "rs/web", true))
		w.create(t, "vols/b", hold, w.ref(t, "pods/b", true))
		w.settle(t)
		deleted := w.deletions(t)

		require.True(t, w.remove(t, "rs/web", apistore.Foreground))
		w.settle(t)
		for _, key := range []string{"rs/web", "pods/a", "pods/b", "vols/b"} {
			require.True(t, marked(t, w, key), "%s is not marked", key)
		}

		w.unhold(t, "vols/b")
		w.settle(t)
		require.False(t, has(t, w, "pods/b"))
		require.True(t, marked(t, w, "rs/web"), "the owner went before its blocking child pods/a")

		w.unhold(t, "pods/a")
		w.settle(t)
		require.Empty(t, w.keys(t))
		require.Equal(t, []string{"vols/b", "pods/b", "pods/a", "rs/web"}, deleted())
	})
}

// TestANonBlockingChildDoesNotHoldAForegroundDeletion: the owner goes while
// a child without Block is still there; the child is deleted all the same.
func TestANonBlockingChildDoesNotHoldAForegroundDeletion(t *testing.T) {
	each(t, func(t *testing.T, w world) {
		w.start(t, owners.CollectorOptions{})
		w.create(t, "rs/web", nil)
		w.create(t, "pods/a", hold, w.ref(t, "rs/web", false))
		w.settle(t)

		w.remove(t, "rs/web", apistore.Foreground)
		w.settle(t)
		require.False(t, has(t, w, "rs/web"), "a non-blocking child held its owner")
		require.True(t, marked(t, w, "pods/a"))

		w.unhold(t, "pods/a")
		w.settle(t)
		require.Empty(t, w.keys(t))
	})
}

// TestAForegroundDeletionLeavesAChildThatAnotherOwnerKeeps: a blocking
// child with another owner present is not deleted: it drops its reference
// to the owner being deleted, which then goes.
func TestAForegroundDeletionLeavesAChildThatAnotherOwnerKeeps(t *testing.T) {
	each(t, func(t *testing.T, w world) {
		w.start(t, owners.CollectorOptions{})
		w.create(t, "rs/a", nil)
		w.create(t, "rs/b", nil)
		w.create(t, "pods/x", nil, w.ref(t, "rs/a", true), w.ref(t, "rs/b", false))
		w.settle(t)

		w.remove(t, "rs/a", apistore.Foreground)
		w.settle(t)
		require.Equal(t, []string{"pods/x", "rs/b"}, w.keys(t))
		require.Equal(t, []string{"rs/b"}, ownerKeys(t, w, "pods/x"))
		require.False(t, marked(t, w, "pods/x"))
	})
}

// TestAnOrphanDeletionKeepsTheChildrenAndRemovesTheReference: the owner
// goes; its children stay, their reference to it removed and their other
// references kept; their own children stay too.
func TestAnOrphanDeletionKeepsTheChildrenAndRemovesTheReference(t *testing.T) {
	each(t, func(t *testing.T, w world) {
		w.start(t, owners.CollectorOptions{})
		w.create(t, "rs/web", nil)
		w.create(t, "rs/api", nil)
		w.create(t, "pods/a", nil, w.ref(t, "rs/web", true))
		w.create(t, "pods/b", nil, w.ref(t, "rs/web", false), w.ref(t, "rs/api", false))
		w.create(t, "vols/a", nil, w.ref(t, "pods/a", true))
		w.settle(t)

		require.True(t, w.remove(t, "rs/web", apistore.Orphan))
		w.settle(t)
		require.Equal(t, []string{"pods/a", "pods/b", "rs/api", "vols/a"}, w.keys(t))
		require.Empty(t, ownerKeys(t, w, "pods/a"))
		require.Equal(t, []string{"rs/api"}, ownerKeys(t, w, "pods/b"))
		require.Equal(t, []string{"pods/a"}, ownerKeys(t, w, "vols/a"))
	})
}

// TestAnOrphanDeletionKeepsAChildTheCollectorHasYetToHandle: a child
// created just before its owner's orphan deletion, and handled after the
// owner (queued before it), is orphaned, not collected: an owner's
// deletion counts the children its cache holds, handled yet or not.
func TestAnOrphanDeletionKeepsAChildTheCollectorHasYetToHandle(t *testing.T) {
	each(t, func(t *testing.T, w world) {
		deleteOwnerQueuedBeforeItsChild(t, w, apistore.Orphan, nil)
		require.Equal(t, []string{"pods/a"}, w.keys(t), "the orphan was collected")
		require.Empty(t, ownerKeys(t, w, "pods/a"))
	})
}

// TestAForegroundDeletionWaitsForABlockingChildTheCollectorHasYetToHandle:
// as for an orphan deletion, a blocking child created just before its
// owner's foreground deletion, and handled after the owner, holds it.
func TestAForegroundDeletionWaitsForABlockingChildTheCollectorHasYetToHandle(t *testing.T) {
	each(t, func(t *testing.T, w world) {
		deleteOwnerQueuedBeforeItsChild(t, w, apistore.Foreground, hold)
		require.True(t, marked(t, w, "rs/web"), "the owner went before its blocking child")
		require.True(t, marked(t, w, "pods/a"))
		w.unhold(t, "pods/a")
		w.settle(t)
		require.Empty(t, w.keys(t))
	})
}

// deleteOwnerQueuedBeforeItsChild deletes rs/web with propagation p just
// after pods/a (with finalizers, blocking) is created naming it, while the
// collector's one worker is busy and rs/web is queued before pods/a; it
// returns once the collector has handled both.
func deleteOwnerQueuedBeforeItsChild(t *testing.T, w world, p apistore.Propagation, finalizers []string) {
	w.start(t, owners.CollectorOptions{}) // one worker
	w.create(t, "rs/old", nil)
	w.create(t, "pods/old", nil, w.ref(t, "rs/old", false))
	w.create(t, "rs/web", nil)
	w.settle(t)
	var delayed atomic.Bool
	w.faults().SetPlan(func(c faultstore.Call) faultstore.Decision {
		if c.Op == faultstore.OpDelete && c.Key == "pods/old" && delayed.CompareAndSwap(false, true) {
			return faultstore.Decision{Delay: 100 * time.Millisecond}
		}
		return faultstore.Decision{}
	})

	w.remove(t, "rs/old", apistore.Background)
	w.settle(t) // the worker waits on its deletion of pods/old
	require.True(t, delayed.Load())
	w.respec(t, "rs/web", "v2") // rs/web is queued, then pods/a
	w.create(t, "pods/a", finalizers, w.ref(t, "rs/web", true))
	require.True(t, w.remove(t, "rs/web", p))
	<-time.After(100 * time.Millisecond)
	w.settle(t)
}

// TestAnOwnerCreatedAgainUnderTheSameKeyDoesNotAdoptTheOldChildren: the
// children of an owner deleted and created again (another UID) are
// collected, whether the collector saw the gap or not, and the new
// owner's children stay.
func TestAnOwnerCreatedAgainUnderTheSameKeyDoesNotAdoptTheOldChildren(t *testing.T) {
	each(t, func(t *testing.T, w world) {
		w.create(t, "rs/web", nil)
		w.create(t, "pods/old", nil, w.ref(t, "rs/web", true))
		w.remove(t, "rs/web", apistore.Background)
		w.create(t, "rs/web", nil) // while no collector runs
		w.create(t, "pods/new", nil, w.ref(t, "rs/web", true))
		w.start(t, owners.CollectorOptions{})
		w.settle(t)
		require.Equal(t, []string{"pods/new", "rs/web"}, w.keys(t))

		w.remove(t, "rs/web", apistore.Background)
		w.create(t, "rs/web", nil) // at once, while it runs
		w.settle(t)
		require.Equal(t, []string{"rs/web"}, w.keys(t))
	})
}

// TestAChildWithTwoOwnersSurvivesUntilBothAreGone: deleting one owner, in
// any mode, leaves a child that another owner keeps; deleting the other
// collects it.
func TestAChildWithTwoOwnersSurvivesUntilBothAreGone(t *testing.T) {
	for _, p := range []apistore.Propagation{apistore.Background, apistore.Foreground} {
		t.Run(string(p), func(t *testing.T) {
			each(t, func(t *testing.T, w world) {
				w.start(t, owners.CollectorOptions{})
				w.create(t, "rs/a", nil)
				w.create(t, "rs/b", nil)
				w.create(t, "pods/x", nil, w.ref(t, "rs/a", false), w.ref(t, "rs/b", false))
				w.settle(t)

				w.remove(t, "rs/a", p)
				w.settle(t)
				require.Equal(t, []string{"pods/x", "rs/b"}, w.keys(t))

				w.remove(t, "rs/b", p)
				w.settle(t)
				require.Empty(t, w.keys(t))
			})
		})
	}
}

// TestAConflictingWriteIsMadeAgainOnTheNewerObject: a user's write landing
// between the collector's read of a child and its write makes that write
// conflict; the collector writes again over the newer object, and the
// user's change stays.
func TestAConflictingWriteIsMadeAgainOnTheNewerObject(t *testing.T) {
	each(t, func(t *testing.T, w world) {
		w.start(t, owners.CollectorOptions{})
		w.create(t, "rs/web", nil)
		w.create(t, "pods/a", nil, w.ref(t, "rs/web", true))
		w.settle(t)
		var delayed atomic.Bool
		w.faults().SetPlan(func(c faultstore.Call) faultstore.Decision {
			if c.Op == faultstore.OpUpdate && c.Key == "pods/a" && delayed.CompareAndSwap(false, true) {
				return faultstore.Decision{Delay: time.Second}
			}
			return faultstore.Decision{}
		})

		w.remove(t, "rs/web", apistore.Orphan)
		w.settle(t) // the collector's removal of the reference waits
		require.True(t, delayed.Load())
		w.respec(t, "pods/a", "v2")
		<-time.After(time.Second)
		w.settle(t)
		require.Equal(t, []string{"pods/a"}, w.keys(t))
		require.Empty(t, ownerKeys(t, w, "pods/a"))
		require.Equal(t, "v2", w.image(t, "pods/a"), "the collector's write lost the user's")
	})
}
