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
package lock
