// Package owners gives converge what Kubernetes' owner references and
// garbage collector give its controllers: objects a controller makes
// name their owner (apistore.Meta.Owners: its key and UID, its create
// revision), a controller of owners is woken when their children change
// (Source), and deleting an owner deletes its children, in the background,
// in the foreground or not at all (Collector).
//
// A child names its owner when it is created:
//
//	pod := &Pod{Meta: apistore.Meta{Owners: []apistore.Owner{
//		{Key: rs.Key, UID: rs.CreateRevision, Block: true},
//	}}}
//
// and the propagation its owner's deletion mark records
// (apistore.Deletion.Propagation: the one the delete gave, or with none
// given the one the owner's own garbage-collector finalizer stood for;
// see apistore.Meta.MarkedWith) says what happens to it:
//
//   - Background: the owner goes at once (or is marked, if it has
//     finalizers of its own); its children are collected once it is gone.
//   - Foreground: the owner stays, marked with apistore.ForegroundFinalizer,
//     while its children are deleted, in the foreground too if they have
//     children (a child waits for its own children); once no child that
//     names it with Block is left, the collector removes the finalizer and
//     the owner goes.
//   - Orphan: the owner stays, marked with apistore.OrphanFinalizer, while
//     the collector removes it from its children's Owners; then it goes,
//     and its children stay.
//
// The collector follows the recorded propagation while its finalizer
// holds the owner; a garbage-collector finalizer a mark does not stand
// for (left by a write around the layer) is removed. A child it collects
// is deleted as Kubernetes' collector deletes one: in the foreground if an
// owner being deleted in the foreground waits for it and it has children
// of its own, else with no propagation given, so that a child carrying
// apistore.OrphanFinalizer orphans its own children.
//
// # Guarantees
//
//   - The owners of every child that changes are woken: a controller given
//     Source reconciles an owner whenever a child naming it is created,
//     updated or deleted, and both owners when a child moves from one to
//     the other.
//   - A background deletion collects the children and their children; a
//     child is deleted once every owner it names is gone, and not before:
//     a child with two owners survives until both are gone, and an owner
//     marked for its own cleanup counts until it is gone.
//   - A foreground deletion keeps the owner marked until its blocking
//     children are gone; a non-blocking child does not hold it, and a child
//     that another owner keeps is not deleted but drops its reference.
//   - An orphan deletion keeps the children and removes the reference.
//   - The propagation recorded in the mark decides, not the finalizers an
//     owner carried: deleted with an explicit Background, an owner that
//     carried the orphan finalizer has its children collected; deleted in
//     the Foreground, it carries the foreground finalizer alone.
//   - A cycle of blocking references does not hold a foreground deletion
//     of one of its members, as in Kubernetes: a child that an owner being
//     deleted in the foreground waits for, that no owner keeps, and one
//     of whose own children is itself being deleted in the foreground, has
//     its references made non-blocking before it is deleted in the
//     foreground (Kubernetes' attemptToDeleteItem), so that the cycle's
//     last member no longer holds its owner.
//   - Both count every child that named the owner when its deletion began,
//     whether or not the collector has handled the child yet.
//   - An owner created again under the same key (another UID) does not
//     adopt the old children: they are collected.
//   - Every write is a compare-and-swap through the API-server layer,
//     against the revision read: a child with finalizers of its own is only
//     marked and waits for its cleanup, and a write that conflicts is made
//     again on the newer object, never over it.
//   - Nothing is collected on a partial view: not before the first sync,
//     not while the store is unreachable or the collector degraded (Ready
//     fails meanwhile), and not for an owner that cannot be read: an owner
//     the cache has seen go is read from the store before its children are
//     deleted.
//   - It is level-triggered: a collector restarted mid-cascade, or run
//     again after a term of leadership, looks at the store afresh and
//     converges; whatever the order of creations, deletions in every mode
//     and restarts (the cycles of Limits aside), once it is idle no object
//     is marked and every object
//     that names owners has one of them there. Its own writes count at
//     once: a child whose owner it has deleted sees the owner gone, though
//     its cache has yet to hold the deletion.
//
// # Limits
//
// The collector sees the keys under CollectorOptions.Prefix: an owner
// outside it counts as present, so children and their owners want one
// prefix. A child created naming an owner whose deletion has begun may
// outlive it: it is collected once the owner is gone.
//
// Cycles are broken exactly where Kubernetes' collector breaks them, with
// its false positives and its gaps: the test above looks at a child's
// children when the child is about to be deleted. So a child that blocks
// an owner deleted in the foreground also stops blocking it, and may go
// after it, if a child of its own was deleted in the foreground first,
// cycle or not. And a cycle two of whose members are marked for a
// foreground deletion (by deletes, or by the collector at once on two
// workers, in graphs where cycles share members) before the collector has
// deleted the others can hold for ever: each member waits for the next,
// none is to be deleted any more, and Health.Deleting lists them; making
// a member's references non-blocking, or removing a member's foreground
// finalizer, lets it go. Kubernetes lets a second delete switch a marked
// object's propagation; the layer keeps the first (see
// apistore.Store.DeleteWith).
//
// Each change costs the collector two reads of the object's metadata (one
// for the index of its cache by owner) and a few map lookups; a child
// whose owner has gone costs one read of that owner from the store before
// its deletion; an owner being deleted in the foreground or with Orphan
// looks at all its children, and reads the metadata of those its cache
// holds, each time one of them changes; a child deleted for such an
// owner does the same with its own children, once. The collector remembers each key
// it has seen removed, or stop naming owners, until its cache holds that.
package owners
