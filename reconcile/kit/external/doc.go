// Package external is one way to write an operator of an external system:
// for a kind, the author supplies the domain only — how to observe, create,
// update and delete the external object of a desired one, and how to list
// the objects the operator marked (World) — and the kit composes the rest
// from converge's parts: the finalizer (resource.Finalize) and a reclaim
// policy, marks with the store's identity and prune (package prune),
// drift against what was last observed and made (package drift), the
// process-wide dependency (package dependency), errors sorted into
// conditions, and creates that are safe across a crash. Its Reconciler is
// a reconcile.Reconciler for reconcile.New:
//
//	vms, err := external.New(s, world, external.Options[VMSpec, VMStatus]{
//		Name: "vmop", Prefix: "vms/",
//		Record: func(st *VMStatus) *external.Record { return &st.External },
//	})
//	c, err := reconcile.New(s, vms, reconcile.Options[*VM]{Name: "vms", Prefix: "vms/",
//		Sources: vms.Sources(), Dependencies: vms.Dependencies()})
//	pruner, err := vms.Pruner(c) // run beside c
//
// A reconciler that needs more (several external objects per resource,
// children in the store) uses the parts directly, as this package does.
//
// # A reconcile
//
// Finalize first: the finalizer is on the resource before anything is
// made for it. Then the external name: the one Options.ExternalName
// chooses, else the one recorded in status (checked against the object's
// mark), or the one a lookup (World.List) finds for the key. Then Observe, and as it found: Create, Update, or
// nothing; then Observe again, and status — the observed Status, the
// Record, the conditions Ready and Synced, ObservedGeneration — written
// with a compare-and-swap through the controller (Request.Store: fenced,
// its echo wakes nothing). A resource marked for deletion runs the
// reclaim policy instead: Delete deletes the external object, Retain
// unmarks it and forgets it.
//
// # Errors
//
// An error of the store is returned as it is (a conflict reconciles the
// newer object at once). An error of the World is sorted (Class: Reject,
// dependency.Down, or Options.Classify) and written into status, Synced
// and Ready False with its reason: Rejected (this object is wrong:
// terminal, retried when it changes), DependencyDown (the system does not
// serve: blamed on Options.Dependency, whose circuit holds every key of
// every controller sharing it), Error (transient: the key's backoff).
//
// # Guarantees
//
//   - A create is safe across a crash at any point: its ID (and the
//     name, if the author chooses names) is recorded in status before
//     the world is called, carried in the object's Mark, and cleared
//     once the name is recorded; a reconcile that finds a create
//     recorded looks the object up (List, by the mark's key and create
//     ID, or Observe by the chosen name) before it creates anything. So
//     a process killed before or after any step of a create, then
//     started again, ends with exactly one object, made once, named in
//     status, and no person asked
//     (TestACrashAtEveryStepOfACreateLeavesExactlyOneObjectWithoutAPerson;
//     over random histories of changes, deletions, hand edits and
//     crashes, the world never holds two objects for a key:
//     TestRandomHistoriesWithCrashesNeverLeakNorDuplicate; the crash
//     clauses run over memory, HTTP, bolt and etcd through
//     externaltest.Run: TestTheCrashClausesHoldOverMemoryAndHTTP,
//     TestTheExternalKitsCrashClausesHoldOverBolt,
//     TestTheExternalKitsCrashClausesHoldOverEtcd).
//   - A status forged to say a create is under way never adopts an
//     object the operator did not make: any holder of a store token can
//     write status, so an object found while status records a create is
//     taken (updated, named in status, then deleted or unmarked with its
//     resource) only if its own mark names this operator, this store and
//     the key, or, unmarked under the name Options.ExternalName chooses,
//     if Options.Creates — the operator's own record, kept where no token
//     reaches — holds that very create. Any other is neither updated,
//     nor marked, nor deleted: the reconcile is terminal (ErrNotAdopted),
//     Synced False, reason NotAdopted, and the resource's deletion
//     leaves it
//     (TestAStatusForgedToSayACreateIsUnderWayNeverAdoptsAnObjectTheOperatorDidNotMake).
//     A World whose Create stores the mark in a step of its own (CREATE
//     DATABASE, then COMMENT ON DATABASE) sets Options.Creates
//     (CreatesDir): an object a crash left unmarked between the two is
//     then adopted, and only then
//     (TestAnObjectLeftUnmarkedByACrashIsAdoptedOnlyByTheOperatorsOwnRecord;
//     crashes at every step, over every backend: externaltest.Run's
//     MarkApart). A create the world refused (Rejected, or NothingMade:
//     the name taken meanwhile) is forgotten in status and in Creates, so
//     an object that takes its name later is not adopted for it
//     (TestACreateTheWorldSaysMadeNothingIsForgottenAndRetried).
//   - A name in status never leads the kit to another object: any holder
//     of a store token can write it. With Options.ExternalName the name
//     is recomputed at every reconcile and deletion, and a recorded name
//     that differs is not used: the chosen one replaces it when a
//     reconcile next succeeds (so a name chosen from the spec, changed,
//     names a new object). Without it, the object a recorded name
//     names is updated, unmarked or deleted only if its mark (read back
//     by Observe, else listed by List) names this operator, this store
//     and the key; any other is left as it is: the reconcile is terminal
//     (ErrNotAdopted), Synced False, reason NotAdopted, and the
//     resource's deletion lets the resource go. A recorded name that
//     names nothing is replaced by the object this operator marked for
//     the key, if List finds one, and never names what the kit creates
//     (TestANameInStatusNeverLeadsTheKitToAnotherObject,
//     TestANameInStatusNeverNamesWhatTheKitCreates,
//     TestANameInStatusBesideACreateTheOperatorRecordedAdoptsNothing;
//     over random histories with forged status writes, no object the
//     operator did not make for the key is ever updated, unmarked or
//     deleted: TestRandomHistoriesWithCrashesNeverLeakNorDuplicate).
//   - Where the world offers no lookup (no List, names chosen by the
//     world), a create whose result is unknown is never made again
//     blindly: the reconcile is terminal (ErrCreateUnknown), status says
//     Synced False, reason CreateUnknown, and how a person settles it
//     (TestACreateCutShortWhereNothingCanLookItUpAsksAPerson).
//   - A deletion is safe across a crash at any point: the external
//     object is deleted (or, under Retain, unmarked) before the
//     finalizer goes, so a process killed before or after any step of
//     it leaves, once started again, neither the object nor the resource
//     (TestACrashAtEveryStepOfADeleteLeavesNoObjectAndTheResourceGone,
//     TestRetainKeepsTheObjectUnmarkedAndPruneNeverTakesIt). Where the
//     kit must know whose the object is (a create recorded, a name read
//     from status) and the world refuses to observe the spec (Rejected),
//     List judges it: only an object it lists with this operator's mark
//     for the key is deleted or unmarked; any other is left, and the
//     resource goes
//     (TestADeletionTheWorldWillNotObserveTouchesOnlyWhatListShowsIsTheOperators).
//   - Status follows the world: after a successful reconcile Synced is
//     True and Ready is True (Available) exactly when the object is up
//     to date and Observation.NotReady is empty, with ObservedGeneration
//     the resource's generation; a reconcile that finds nothing to change
//     writes nothing
//     (TestStatusSaysReadyAndSyncedWithTheObservedGeneration).
//   - Errors are sorted into conditions: a rejected object is terminal
//     and in status until its spec changes; a dependency down is blamed
//     (dependency.ErrDown) and in status; any other error of the world is
//     in status and retried with backoff
//     (TestARejectedObjectIsTerminalInStatusUntilItsSpecChanges,
//     TestADependencyDownIsBlamedAndInStatus,
//     TestATransientErrorIsInStatusAndRetried). With Options.Validate,
//     a resource it refuses is Rejected before the world is asked
//     anything, whatever its status says, and its deletion still runs
//     the cleanup
//     (TestAResourceValidateRefusesIsRejectedBeforeTheWorldIsAsked).
//   - Drift made by hand is put back: with List, a drift source wakes a
//     key whose object's fingerprint differs from what its reconcile
//     last observed and made, or that vanished; without it, every key is
//     looked at again after Options.Poll
//     (TestDriftMadeByHandIsPutBack; a size the operator made, then put
//     back to the old one by hand, is found:
//     TestEveryHandChangeIsPutBackByTheNextPollWhateverTheOperatorDidBetween).
//     What the drift source expects is only ever an object the kit saw
//     as its spec says: a look after the kit's own create or update that
//     finds it otherwise (a hand change landing between the write and
//     the look) is drift, and the next
//     poll wakes the key whatever it lists. So every hand change, to any
//     part the fingerprint covers, before, during or after a reconcile,
//     is put back within one Drift.Interval of the last one
//     (TestEveryHandChangeIsPutBackByTheNextPollWhateverCameBetween, a
//     model over random sequences). Observation.Fingerprint and
//     Listed.Fingerprint must cover everything a hand change can alter
//     that Observe compares: a change the fingerprint leaves out is found
//     by no poll.
//   - An object the kit manages without its mark (under the name
//     Options.ExternalName chooses: one that existed before the
//     operator, or one whose mark a person removed; where the world
//     names objects, an unmarked one is not the operator's, and is left
//     alone) is managed as it is and never marked: a mark says the
//     operator made the object, and prune takes only marked ones. The drift source lists it under its key by name,
//     so that polls wake its key when it drifts, not at every poll
//     (TestAnUnmarkedObjectItManagesIsPolledLikeTheOthersAndNeverAdopted).
//   - Prune deletes only objects this operator marked from this store
//     for a key no longer desired, under package prune's gates; the mark
//     reads the store's identity once per identity
//     (TestAnObjectNoLongerDesiredIsPrunedAndNoOtherIs).
//   - The same operator runs against a store server (store/httpstore)
//     as in process (TestAnOperatorOnAStoreServerConverges).
//   - Bad options are an error matching ErrInvalid, never a panic
//     (TestNewRefusesBadOptionsWithErrInvalid).
//
// # Limits
//
// Fencing covers the store, not the world: a deposed leader's create in
// flight may land after the new leader looked the object up, and make a
// second object. The mark names the key and the create, so such an
// object is found by a person, and by prune once its key is gone.
//
// A World that can say nothing about marks (no List, and Observe reads
// no Mark back) cannot tell whose an object is: without
// Options.ExternalName, the object a name in status names is then taken
// as the operator's, so such a World must check in Update, Delete and
// Unmark that the object is its own, or choose names (ExternalName). A
// World without List whose Observe reads marks back is checked as any
// other for a marked object, but an unmarked one is taken; and a name in
// status that names nothing makes the kit create a new object, the old
// one left to a person (nothing can look it up).
package external
