// Package apistore is the layer an API server puts above its datastore,
// for any store.Store: deletion that waits for cleanup (finalizers), a
// generation and a status owned by the layer rather than by whoever
// writes, and owner references for cascading deletion. Kubernetes' API
// server does this above etcd for every controller; here a Store wraps any
// store (memory, bbolt, etcd, or one served over HTTP, whose handler then
// applies it for every client: Go programs, convergectl, curl).
//
// A type opts in by giving a Kind: where its metadata (Meta) is, and which
// part of it is spec and which status. reconcile/kit/resource's Resource has
// one; JSONKind serves JSON objects of the shape
// {"metadata":{...},"spec":...,"status":...}.
//
//	layer, err := apistore.New(inner, apistore.JSONKind{})
//
// A kind may declare its defaulting and validation, which the layer runs
// where objects are written (WithAdmission; for JSON objects, the
// declarative rules of store/apistore/schema):
//
//	layer, err := apistore.New(inner, apistore.JSONKind{},
//		apistore.WithAdmission("roles/", apistore.Admission[json.RawMessage]{Validate: validRole}))
//
// The layer's Store is a store.Store[T], so everything written for stores
// works over it, and it offers the writes of an API server beside:
// UpdateStatus (StatusWriter), Replace (an Update that says whether it
// deleted: Replacer), DeleteWith (a delete with a Propagation:
// PropagatingDeleter) and Apply (a user's document written over what
// controllers set: Applier). A client of a store served with the layer offers the
// same interfaces; a controller's writer detects them by type assertion.
//
// # Guarantees
//
// Every clause holds on every backend and over HTTP, as the conformance
// suite apistoretest checks:
//
//   - Generation: a created object has generation 1; a write that changes
//     the spec bumps it by one, whoever writes; a write that leaves the
//     spec as it is, and every status write, keeps it. A generation given
//     by the writer is ignored.
//   - Status: UpdateStatus changes the status alone (spec, metadata and
//     generation stay as stored); Update changes the spec and the writer's
//     metadata (finalizers, owners) and keeps the stored status. Both are
//     compare-and-swap writes against the revision given.
//   - Finalizers: deleting an object that has finalizers marks it
//     (Meta.Deletion, with the revision the delete was made against)
//     instead of removing it; the mark never changes; the object stays
//     readable; no finalizer can be added to a marked object (an error
//     matching ErrDeleting and store.ErrInvalid); removing the last
//     finalizer of a marked object removes it in the same compare-and-swap
//     (a write in between makes it a conflict, and a failed guard stops
//     it). Creating a key that is marked fails with an error matching
//     ErrDeleting and store.ErrExists.
//   - Propagation, as Kubernetes' API server: an explicit propagation
//     replaces the garbage-collector finalizer the object carries by its
//     own (Foreground: ForegroundFinalizer, Orphan: OrphanFinalizer,
//     Background: none, and the object goes at once if no finalizer is
//     left); a delete that gives none (DeleteWith with "", and Delete)
//     keeps it, and it decides. The mark records the propagation decided
//     (Meta.MarkedWith states the rule). No object carries both
//     finalizers: a write listing both fails with store.ErrInvalid. A
//     delete of an object already marked changes nothing, whatever its
//     propagation (Kubernetes would switch the policy; here the first
//     stands).
//   - Apply: an apply changes only what the applied document states. Its
//     spec replaces the stored one (a JSON document without a spec keeps
//     it); its status is never written; finalizers and owners it names are
//     added (an owner replaces the stored one of its key), and none is
//     ever removed, so those controllers set survive a document that does
//     not name them. It never completes a deletion: a marked object stays
//     marked, and a finalizer an apply adds to it fails with an error
//     matching ErrDeleting and store.ErrInvalid. An absent object is
//     created; a lost race is retried over the latest revision.
//   - Admission: a kind's Admission, registered for a key prefix with
//     WithAdmission, runs on every write that stores a spec (Create,
//     Update, Replace, Apply: Default, then Validate, on the value that
//     would be stored) or a status (UpdateStatus, Create:
//     ValidateStatus), and on every write that creates a key (Create, an
//     Apply that creates: ValidateKey), never on a delete. A refused object fails with an
//     error matching ErrRejected and store.ErrInvalid whose message names
//     the field (FieldError), and nothing is stored. A write that leaves
//     the spec as stored is not judged again, so an object stored before
//     its rule can still have its finalizers removed and be deleted.
//   - Metadata: the layer refuses, with store.ErrInvalid and the field
//     named (metadata.finalizers[i], metadata.owners[i]), a finalizer that
//     is not a qualified name (ValidateFinalizer: "name" or "prefix/name",
//     at most 63 characters after a DNS subdomain of at most 253) or is
//     listed twice, and an owner whose key is not a valid key, whose UID
//     is below 1, or whose key is listed twice. What the stored object
//     already lists is not judged again: bad metadata stored before these
//     rules can be kept, removed, and its object deleted.
//   - Recreation: an object deleted and created again has a new create
//     revision, and a write made at a revision of the first (an old
//     cleanup's) fails with store.ErrConflict and leaves it alone.
//   - Writes that change nothing: an Update, Replace or UpdateStatus that
//     would store what is stored (spec, status and metadata alike, as the
//     wrapped store keeps them: see store.Unchanged) is not stored. It
//     returns the object as stored, at its revision, makes no watch
//     event, and still checks the revision given and the guards, without
//     writing (store.Check, atomic on every backend of this module): a
//     stale revision is store.ErrConflict, a failed guard
//     store.ErrGuardFailed. A controller that finds nothing to change
//     therefore goes idle.
//   - Bad input: a value that is not of the Kind (for JSONKind: not a JSON
//     object, or metadata that does not decode as Meta) fails with
//     store.ErrInvalid and writes nothing.
//   - Identity: Identity returns the identity of the store below (see
//     store.Identifier), so that a controller can tell an emptied store
//     from another, fresh one.
//
// Everything else is the wrapped store's: revisions, watches (a mark is
// an update event; the removal of the last finalizer, a delete event),
// guards, errors.
package apistore
