// Package etcdstore is a store.Store over etcd v3: the distributed backend,
// for controllers that run as several replicas or share their state with
// other programs.
//
// # Client and prefix
//
// New takes a ready *clientv3.Client, so endpoints, TLS, authentication and
// dial options are the caller's configuration, and a prefix such as "app/"
// under which every key of the Store lives. Keys, List and Watch prefixes and
// Guard keys are all relative to that prefix; nothing outside it is read or
// written. Several Stores, with different value types, may share one client
// and one cluster under different prefixes. The Store does not own the
// client: close the client after the last call and watch have ended.
//
// # Revisions
//
// Object revisions are etcd's own: Revision is the key's ModRevision and
// CreateRevision its CreateRevision, and the revision a List or Revision
// reports is the cluster's revision when the request was served. They keep
// the store contract (one store-wide counter that only grows) with one
// difference from the in-memory and bbolt stores: etcd's counter belongs to
// the whole cluster, so writes outside the prefix (other Stores, other
// programs, leases) consume revisions too, and the revisions of this Store's
// writes may skip numbers. Revision reports the cluster's revision, which
// may therefore be ahead of this Store's last write.
//
// # Consistency
//
// Get, List and Revision are linearizable reads: they reflect every write
// acknowledged before they started, whichever member serves them. Create,
// Update and Delete are each one etcd transaction whose compares (the key's
// CreateRevision or ModRevision and every Guard) are checked atomically with
// the write; when a compare fails, the same transaction reads what the key
// and the guarded keys hold, so the error says exactly which condition failed
// (a failed guard is reported before a conflict, as by every Store). Every
// request carries etcd's require-leader flag: a member cut off from the
// leader refuses at once instead of waiting.
//
// # Watch
//
// A watch is an etcd watch on the prefix from the requested revision, with
// the previous value of each key, so that Deleted events carry the last
// value. etcd's client resumes a broken watch stream by itself (on another
// member if need be) from the last revision it delivered, so a watch ends
// only when the history it needs was compacted (store.ErrCompacted), when
// its member loses the leader (store.ErrUnavailable), or when the caller
// stops it. Events are delivered in revision order; two events can share a
// revision only when a program other than a Store wrote several keys in one
// transaction. A watcher that does not read holds nothing back: the etcd
// client buffers its pending events in memory.
//
// # Locks
//
// Locker implements lock.Locker natively on an etcd election
// (clientv3/concurrency): a lease kept alive by the client, a leader key
// bound to it, and the key's CreateRevision as the fencing token, so that
// lock.Elector runs on etcd without polling a lease record.
//
// # Errors
//
// Errors match the store package's values under errors.Is. A cancelled
// context returns the context's error. A deadline that expires before the
// cluster answers returns an error matching both store.ErrUnavailable and
// context.DeadlineExceeded: a write may or may not have happened. A request
// larger than the client or the server accepts, a transaction with more
// operations than the server allows, or an encoded value over the
// configured maximum matches store.ErrInvalid. Any other failure of the
// connection or the cluster (no leader, timeouts, unreachable members, a
// closed client, refusals by etcd's authentication) matches
// store.ErrUnavailable and wraps etcd's error, which errors.Is can also
// compare with the errors of go.etcd.io/etcd/api/v3/v3rpc/rpctypes. A value
// under the prefix that the Codec cannot decode (written by another program)
// is reported with the Codec's error.
package etcdstore
