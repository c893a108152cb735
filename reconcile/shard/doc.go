// Package shard splits a controller's keys among replicas: keys map to a
// fixed number of buckets (Bucket), each bucket has one owner at a time,
// and every write a reconcile makes carries its bucket's fencing epoch, so
// that no key is ever changed on behalf of a replica that no longer owns
// it. A Replica implements reconcile.Sharder; the reconciler runs
// unchanged:
//
//	raw := ... // a store.Store[[]byte]: one etcd prefix, or one byte store
//	rep, err := shard.New(raw, shard.Options{ID: hostname})
//	c, err := reconcile.New(store.NewView[*Item](raw, nil), rec, reconcile.Options[*Item]{
//		Name: "items", Prefix: "items/", // the objects only: not the shard/ records
//		Shard: rep,
//	})
//	// run rep.Run and c.Run (a Manager runs both; rep is not leader-only)
//
// # Records
//
// Under Options.Prefix (P) live, in the same keyspace as the controller's
// objects (so that the store checks the guards of their writes: views of
// one byte store, or one etcd client's keyspace):
//
//   - P/members/<id>: each replica's membership lease (lock.Lease, one per
//     replica, never one per key or bucket), renewed every TTL/3.
//   - P/assigner: the election lease of the assigner (lock.Elector).
//   - P/plan: the assigner's plan, the target owner of every bucket.
//   - P/owner/<n>: bucket n's owner (replica ID and membership term);
//     the record's revision is the bucket's fencing epoch.
//
// # Protocol
//
// One replica at a time is the assigner. It watches the member records
// and declares a member dead once it has seen its record unchanged for
// the TTL on its own monotonic clock (no wall clocks are compared), then
// deletes it. From the live members it computes a balanced plan, sticky to
// the previous one: every member gets floor(B/N) or ceil(B/N) buckets, and
// only as many buckets move as balance requires (going from N to N+1
// members moves floor(B/(N+1)) of them, or a few more). It writes the
// plan, and writes the owner record of every bucket that has none or
// whose owner is no longer a member (a crash takeover). All its writes
// carry its election guard.
//
// Each replica follows the owner records and the plan. A record naming
// its current membership term makes it the bucket's owner: Claim then
// returns the guards {P/owner/<n> at the epoch, its member record's term}
// and a context that ends when the ownership does; Subscribe's callback
// learns of the take, with the epoch as revision. When the plan gives an
// owned bucket to another replica, the owner hands it over: it stops
// claiming the bucket's keys and cancels their in-flight reconciles at
// once, waits Options.Drain for them to return, then rewrites the owner
// record to the new owner, conditioned on the epoch and guarded by its own
// membership. That write is the new epoch: the new owner starts when it
// sees it.
//
// # Guarantees
//
//   - Writes: a write made under a Claim is accepted only while the
//     bucket's owner record is at the claimed epoch and the replica's
//     membership term is current. Once a bucket has changed hands, or the
//     replica has been declared dead, its writes fail with
//     store.ErrGuardFailed, whatever the timing: a replica paused beyond
//     its TTL and resumed writes nothing. On etcd, where a leader change
//     resets every lease to its full TTL, this is what exclusivity rests
//     on, never on timing.
//   - Reconciles: a replica stops claiming a bucket's keys, and the
//     contexts of its claims end, before the bucket's next owner is named:
//     at once for a handover (then Drain passes before the record changes),
//     and within the lease's RenewDeadline (TTL*2/3) of the last renewal
//     for a replica cut off from the store, while others wait at least the
//     TTL. Two replicas reconcile a key at once only if a reconciler runs
//     on for longer than Drain after its context ends (handover), or clock
//     rates differ beyond the lease's tolerance (see lock.LeaseOptions).
//   - Handover bound: a planned handover completes within Drain plus two
//     store round trips (the owner's write, the new owner's watch event)
//     of the plan reaching the owner. After a crash, the buckets of the
//     dead replica have an owner again within TTL of its last renewal plus
//     the assigner's writes (a round trip each, 16 at a time): every
//     replica follows the member records, so an assigner elected after
//     the previous one crashed judges from its own earlier sightings
//     rather than starting a TTL afresh. A bucket whose owner is past its
//     renew deadline shows in Status.Ownerless until then.
//   - Traffic: per replica, one member lease renewal every TTL/3; three
//     watches (member records, owner records, plan); as a contender for
//     the assigner's role, one read and one watch per renewal of the
//     assigner's lease; and writes only when buckets move (the assigner:
//     the plan, and owner records for dead members and new buckets).
//     Watch events per replica: one per member renewal (N per TTL/3) and
//     one per owner record change. Nothing grows with the number of keys.
//
// The handover tests' figures (their distributions over 20 joins and 20
// crashes) are in reconcile/internal/bench/README.md.
//
// Not guaranteed: buckets are balanced by count, not by keys or load;
// Options.Buckets must never change on a running deployment.
package shard
