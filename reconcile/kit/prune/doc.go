// Package prune deletes from the world what an operator made there and no
// longer wants: a database whose store object was deleted while no
// controller ran, say. It is a full-sync hook, as cilium/statedb's
// reconciler has: a Pruner runs beside the controller, after its initial
// list, on an interval and on demand, lists the world, reads the desired
// set at a revision, and deletes what is its own and not desired.
//
// Deleting is the one thing an operator must not do on a misreading: "an
// empty store reads as delete everything" drops real databases when an
// operator starts on an emptied state directory. So a pass deletes nothing
// unless every gate holds (Check), and then only what Select picks.
//
// # Marking what the operator owns
//
// The operator stores, in the world, beside each object it creates, the
// Pruner's Mark: its own name and its store's identity (store.Identifier),
// in whatever the world keeps beside an object — a PostgreSQL COMMENT
// holding Mark.String, a label, a pair of tags:
//
//	mark, err := pruner.Mark(ctx)
//	// CREATE DATABASE app; COMMENT ON DATABASE app IS '<mark.String()>'
//
// Options.World lists the world's objects with the marks read back
// (ParseMark), each with the store key it stands for; Options.Delete
// deletes one. A store made anew has another identity, so objects made
// from the old one are never deleted by an operator pointed at the new.
//
// # Guarantees
//
//   - Nothing is deleted before the controller's first sync, while its
//     primary store is degraded (Ready fails with reconcile.ErrDegraded),
//     while the store's identity cannot be read or changes during the pass,
//     or with an empty desired set unless Options.AllowEmpty says so: such a
//     pass is refused (ErrRefused, with its cause) and deletes nothing.
//   - A pass deletes exactly the world's objects marked with this owner and
//     this store's identity whose key is under Options.Prefix and not in the
//     desired set; an object unmarked, or marked by another owner or from
//     another store, is never deleted.
//   - The world is listed before the desired set is read (from the store,
//     at one revision), so an object made for a key created during the pass
//     is kept; a key created again while its object was being deleted is
//     handed to the controller (Enqueue) once the delete is done, so its
//     object is made again.
//   - Mark reads the store's identity once per identity, not per call
//     (a Marker): again only once a pass has read another
//     (TestAMarkReadsTheStoresIdentityOncePerIdentity).
//   - Passes run one at a time, inside Run (so, under leader election, only
//     in the leader, with a context cancelled when the term is in doubt);
//     Prune asks for one now and returns what it did.
package prune
