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
// # Identity
//
// A Store's identity (Identity, store.Identifier) is made of the cluster's
// ID and the prefix, with a record of random bits that the first call
// writes at the etcd key that is the prefix itself: etcd's cluster ID alone
// is derived from the initial cluster token and peer URLs, so a cluster
// wiped and bootstrapped again with the same flags has the same one, and
// the record tells it apart. A cluster restored from a snapshot under its
// own --initial-cluster-token has a new cluster ID, so it reads as another
// store; see Identity for a restore under the old token. Restore writes a
// snapshot of any store (store/snapshot) into an empty prefix, as a store
// with an identity of its own and the history before it compacted.
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
// value. Watch returns only once a member has created the watch (it waits
// for etcd's created notification): a returned watch is connected, and
// when no member with a leader creates it within the open timeout
// (WithWatchOpenTimeout, DefaultWatchOpenTimeout by default) Watch fails
// with store.ErrUnavailable. A start revision already compacted fails at
// once with store.ErrCompacted. etcd's client resumes a broken watch
// stream by itself (on another member if need be) from the last revision
// it delivered, so a watch ends only when the history it needs was
// compacted (store.ErrCompacted), when its member loses the leader
// (store.ErrUnavailable), or when the caller stops it. Events are
// delivered in revision order; several events share a revision when a
// program other than a Store wrote several keys in one transaction. A
// watcher that does not read holds nothing back: the etcd client buffers
// its pending events in memory. Each watch has a gRPC stream of its own.
//
// Every watch implements store.ProgressRequester: RequestProgress reads
// the cluster's revision R (a linearizable read), then asks the watch's
// member for a progress notification, which etcd sends on the watch's
// stream only once the watch has sent every event up to the member's
// revision; the watch forwards the first one at or past R as a
// store.Progress event, after the events it covers, and asks again every
// 250 ms until one comes (etcd ignores a request while the watch is
// catching up).
//
// # Detecting an outage
//
// An etcd watch can stay open and silent: with every member down or
// unreachable, etcd's client keeps reconnecting and the watch neither
// delivers nor ends. Two mechanisms bound how long that goes unnoticed:
//
//   - Every request and every watch carries etcd's require-leader flag. A
//     member that has lost its leader (a quorum loss, or a partition that
//     isolates it) refuses requests at once and ends the watches it
//     serves with store.ErrUnavailable within about six election
//     timeouts (it notices the loss within one to two, and cancels its
//     streams once it has seen no leader at three checks an election
//     timeout apart): about 6 s with etcd's default timings, 0.6 s with a
//     100 ms election timeout.
//   - A progress request is answered only when the cluster has a leader
//     and the watch's member can be reached (its linearizable read needs
//     both), so a consumer that calls RequestProgress every
//     heartbeat and treats a request unanswered for a heartbeat as an
//     outage detects any outage, including the silent one, within two
//     heartbeats. A call with a deadline (Revision, for one) fails with
//     store.ErrUnavailable at the deadline.
//
// Once the cluster serves again, the open watch resumes where it was (or,
// if it ended, a new Watch after the last revision received resumes
// without a loss or a repeat) and answers the pending request.
//
// # Locks
//
// Locker implements lock.Locker natively on an etcd election
// (clientv3/concurrency): a lease, a leader key bound to it, and the key's
// CreateRevision as the fencing token, so that lock.Elector runs on etcd
// without polling a lease record. The Locker renews the lease itself, every
// TTL/3 with attempts bounded by TTL/6, rather than through the client's
// shared keep-alive stream, on which one renewal stuck behind a dead
// leader (for etcd's request timeout, about 5 s) would delay every other
// until the lease was lost: a term survives a leader failover that ends
// within about two thirds of the TTL.
//
// # Errors
//
// Errors match the store package's values under errors.Is. A nil context
// matches store.ErrInvalid; a cancelled one returns the context's error. A deadline that expires before the
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
