// Package queue is a deduplicating work queue for reconciliation loops.
//
// Producers add keys; workers Get a key, reconcile it, and call Done.
//
// The Queue's methods are its core:
//
//   - Add, AddWith (a priority, a delay, a rate-limited delay, tags, a
//     hint: AddOptions) and AddBatch (many adds under one lock) queue keys;
//   - Get hands out one key, GetBatch up to N, each as a Handout with the
//     tags and hint of its adds; Done gives a key back;
//   - Forget resets a key's backoff; Remove cancels its queued work; Grow
//     makes room for a burst of keys about to come;
//   - ShutDown stops the queue at once; Drain stops it gracefully.
//
// Everything that reads the queue without changing it (Len, Queued,
// Retries, Stats, the listings of keys) is on its View, for debug pages,
// health checks and metrics exporters. The names these replaced (AddAfter,
// GetHandout, Queue.Snapshot, ...) stay for one release, deprecated, each
// doing exactly what its replacement does.
//
// The queue guarantees, for every key:
//
//   - A key is in at most one of: waiting, processing. Adding a waiting key
//     is a no-op (deduplication). Adding a processing key marks it dirty: it
//     is queued again when Done is called, and never handed to a second
//     worker meanwhile. So one key is never processed by two workers at
//     once, and an add is never lost: after the last add of a key, the key
//     is handed out at least once.
//   - Delayed adds (AddOptions.After) wait on one timer for the whole queue, over a
//     min-heap of deadlines: no goroutine or timer per key, and the caller
//     never blocks. Repeated delays keep the earliest deadline. An immediate
//     Add of a delayed key hands it out once, now, and cancels the delay.
//   - Backoff: a rate-limited add (AddOptions.RateLimited) asks the queue's
//     RateLimiter how long to wait; Forget resets the key's backoff after a
//     success.
//   - Priorities: higher first, FIFO within a priority, with aging: a key
//     gains one priority level for every Options.AgingAfter keys handed out
//     while it waits, so a low-priority key is served even under a steady
//     stream of high-priority adds.
//   - Get blocks until a key is ready, the context ends, or the queue shuts
//     down, and its error says which.
//   - ShutDown stops at once; Drain stops gracefully and reports every key
//     it had to leave behind, so nothing is dropped silently. Drain returns
//     only once no key is in flight, or its context has ended, even if
//     ShutDown is called meanwhile.
//   - Bad input (a nil context) is an error matching ErrInvalid, never a
//     panic; the zero Queue is ready to use, and the zero View reads an
//     empty queue.
//
// Batches: AddBatch adds many keys under one acquisition of the lock, each
// exactly as AddWith would; GetBatch hands out up to N ready keys at once,
// each processing until its own Done, exactly as Get would. Grow makes room
// for a burst about to come, so that its keys are placed without rehashing
// the queue's index.
//
// In steady state Add, Get, GetBatch (given its buffer back) and Done
// allocate nothing, nor do View's Len and Queued, and the memory a burst
// of keys needed is given back once most of it has drained, whatever keys
// the burst left behind.
package queue
