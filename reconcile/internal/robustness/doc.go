// Package robustness checks converge's stores the way etcd's robustness
// tests check etcd: concurrent clients run a random workload of
// compare-and-swap writes against a store while faults are injected, every
// call is recorded with its call and return time, and the recorded history
// is then checked for linearizability with porcupine and the watch stream
// observed during the run is checked against the history.
//
// # Plugging in a backend
//
// A backend is one factory function (Backend.Open) returning an empty
// store.Store[Value]; Backend.Restart optionally closes a store and opens it
// again on the same data, and Backend.Disrupt optionally injects a fault the
// store must ride out while the clients keep calling (the tests crash the
// leader of an embedded 3-member etcd cluster). Record runs the workload and the watcher over it
// and returns a Report; Check, ValidateWatch and CheckCompaction judge the
// report. Verify does all of it for one test.
//
// # The model, and why the history is not partitioned
//
// The model (Model) is a compare-and-swap register per key plus the store's
// global revision: every successful write takes exactly the next revision,
// across all keys, starting after the store's revision when the run began
// (Report.Start: 0 for store.Memory and boltstore, 1 for a new etcd
// cluster, whose first write is revision 2). Record runs every history on a
// store that nothing else writes, so the property is not relaxed for any
// backend: etcd's cluster-wide revision is contiguous too, across leader
// elections, as long as only the run writes to the cluster. Partitioning the history by key would make the search
// cheaper but would lose that cross-key property: two writes to different
// keys could then claim the same revision, or revisions could be handed out
// against real-time order, and no partition would notice. Record therefore
// uses a handful of keys (at most MaxKeys) and the whole history is checked
// as one partition. The model state is a small fixed-size comparable value
// (State) with a cheap hash, which keeps porcupine's memoisation effective.
// The price is a search that grows steeply with the number of clients whose
// operations overlap: 2,000 operations from 8 clients check in
// milliseconds on the memory store and in a fraction of a second on bolt,
// where nearly every operation overlaps others; 10,000 take seconds; 16
// clients on bolt take minutes. Runs therefore keep to 8 clients and grow
// in length and seeds instead.
//
// # Faults and ambiguous operations
//
// NewFaults (Faults, a store/faultstore Store) injects two kinds of failure into
// writes. A failure before commit does not reach the store: the write is
// recorded as failed and the model requires that it had no effect. A
// failure after commit reaches the store
// and then loses the response: the client sees store.ErrUnavailable and
// cannot know whether the write happened, as with a timeout against a remote
// store. Following porcupine's convention such an operation never returns
// (its return time is math.MaxInt64) and its output is unknown; the model
// applies it if its precondition holds at the point where it is linearised
// and otherwise leaves the state alone, so both outcomes are accepted. A
// client whose operation was ambiguous continues under a new client id, as
// in etcd's robustness tests, because its next operation may overlap the
// one still pending. The fault store keeps the lost response (the real outcome) for
// ValidateWatch, which thereby knows whether an ambiguous write must appear
// in the watch stream or must not; the linearizability check never sees it.
//
// Faults fire at counts drawn from the seed (Schedule), not by chance in
// time: the first within the mean gap between them, each later one 1 to
// twice the gap after the one before. So how many a run sees depends on
// the seed and on how many writes, applied writes and refused writes it
// makes, never on scheduling, and a run long enough has failures before
// commit and ambiguous writes that committed and that did not. Lost
// responses are counted among the writes the store applied and among
// those it refused, separately, for that reason.
//
// # Transports, and ambiguous writes whose outcome the server knew
//
// Backend.Serve puts a transport between the clients and the store (the
// tests serve it with store/httpstore and drop connections). Every recorded
// call then carries an id (WithCallID, CallID) to the server, where
// Outcomes.Store records the answer the store gave it. A write whose answer
// the transport lost is ambiguous to its client, as it must be, but the
// server side knew its outcome: Record marks it Op.Known, and Check
// resolves it first (Resolve), as etcd's robustness tests patch their
// histories with what the server reports: a write the server refused is
// left out, any other answer becomes a completed operation returning when
// the client saw the failure. This pins those writes instead of letting
// them go either way, so the check is stricter, and it keeps porcupine's
// search, which grows exponentially with the ambiguous writes pending at
// once, finishing: a run that drops connections leaves hundreds of them.
// Only the writes nobody knew stay ambiguous (the fault store's lost
// responses model a store that does not know its own outcome). Config
// CheckTimeout bounds the check; a check that does not finish fails.
package robustness
