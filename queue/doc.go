// Package queue is a deduplicating work queue for reconciliation loops.
//
// Producers add keys; workers Get a key, reconcile it, and call Done. The
// queue guarantees, for every key:
//
//   - A key is in at most one of: waiting, processing. Adding a waiting key
//     is a no-op (deduplication). Adding a processing key marks it dirty: it
//     is queued again when Done is called, and never handed to a second
//     worker meanwhile. So one key is never processed by two workers at
//     once, and an add is never lost: after the last add of a key, the key
//     is handed out at least once.
//   - Delayed adds (AddAfter) wait on one timer for the whole queue, over a
//     min-heap of deadlines: no goroutine or timer per key, and the caller
//     never blocks. Repeated delays keep the earliest deadline. An immediate
//     Add of a delayed key hands it out once, now, and cancels the delay.
//   - Backoff: AddRateLimited asks the queue's RateLimiter how long to wait;
//     Forget resets the key's backoff after a success.
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
//     panic; the zero Queue is ready to use.
//
// Batches: AddBatch adds many keys under one acquisition of the lock, each
// exactly as AddWith would; GetBatch hands out up to N ready keys at once,
// each processing until its own Done. Grow makes room for a burst about to
// come, so that its keys are placed without rehashing the queue's index.
//
// In steady state Add, Get and Done allocate nothing, and the memory a burst
// of keys needed is given back once most of it has drained, whatever keys
// the burst left behind.
package queue
