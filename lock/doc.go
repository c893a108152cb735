// Package lock serialises work: per key inside a process (Keyed), and across
// processes through a store (Lease, a Locker), with leader election on top
// (Elector).
//
// # Leases and fencing
//
// A Lease keeps a Record at a key of any store.Store. Expiry is never judged
// by comparing clocks of different hosts: the holder gives up once it has
// failed to renew for RenewDeadline on its own monotonic clock, and a
// contender takes over only after seeing the record unchanged for a longer
// TTL on its own monotonic clock (LeaseOptions states the bound).
//
// Timing alone cannot stop a holder that is paused (a long garbage
// collection, a frozen VM) between checking its context and writing. Every
// term therefore has a fencing token, the record's CreateRevision, and a
// store.Guard that holds only while the term is current: writes made on
// behalf of the lock carry Lock.Guard, and the store rejects those of a
// deposed holder with store.ErrGuardFailed. Guards are checked by the store
// that holds the lease record, so fenced writes go to that store: keep the
// lease and the objects of other types in views of one byte store
// (store.NewView), or use a backend whose typed stores share one keyspace
// (etcd).
//
// # Leader election
//
// An Elector campaigns on any Locker and runs a function while it leads,
// with a context cancelled the moment leadership is in doubt. Backends with
// native elections implement Locker and Lock themselves.
//
// # Fairness
//
// A Lease is not a queue: while its record exists, its holder holds it
// legitimately, for as long as it renews, and a free moment (the record
// deleted) goes to whichever contender creates the record first. A
// contender learns of that moment through its watch, one event and two
// store calls away, whereas a holder that releases and campaigns again
// needs no wake-up; so a Lease, having deleted the record of its own term,
// leaves the key to others for RenewInterval/2 before it creates the
// record again. What holds, then: between Leases of this package (an
// Elector over one included), a contender watching the record takes the
// next term when the holder releases, provided its watch event and create
// take less than that yield; the holder of a deleted record sees its loss
// within RenewInterval, and an Elector over it then leads again within
// RenewInterval plus what remains of the term a rival took meanwhile,
// however short and frequent the rival's terms
// (TestAnElectorIsNotStarvedByARivalTakingShortTermsBackToBack: 1,000
// flips against a rival releasing and campaigning again at once, each
// new term within 130 ms for a TTL of 300 ms; without the yield the rival
// won every free moment and the elector had none for 33 TTLs). No bound
// holds against a rival that renews (it holds the lease: that is
// leadership working), nor against a writer of the record that is not a
// Lease and re-creates it at once; among several contenders, the one
// whose create lands first wins. etcdstore's Locker queues contenders by
// creation (etcd's election) and serves them in order.
package lock
