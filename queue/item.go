package queue

import (
	"math"
	"slices"

	"github.com/converge-go/converge/internal/mapshrink"
)

// item is the queue's record of one key. It exists while the key is
// waiting, delayed or processing, and is recycled afterwards.
//
// It is kept small (64 bytes for string keys): a key is never waiting and
// processing at once, so one field holds the virtual time of a waiting key
// and the start time of a processing one.
type item[K comparable] struct {
	key K
	// pos is, while waiting, the key's absolute position in its priority's
	// ring; while delayed, the order of its delay among equal deadlines.
	pos uint64
	// at is, while waiting, the key's virtual position: the hand-out count
	// when it became ready minus its priority's aging offset (see offset);
	// while processing, the time it was handed out (ns since the epoch).
	at int64
	// deadline is, while delayed, when the key becomes ready (ns since the
	// epoch); while waiting, with Metrics configured, when it became ready.
	deadline   int64
	priority   int32  // AddOptions.Priority, clamped to 32 bits
	delayIdx   int32  // position in the delay heap, or -1
	procIdx    int32  // while processing, position in Queue.procs
	tags       uint32 // ORed AddOptions.Tags of the adds not yet handed out
	hint       uint32 // AddOptions.Hint of the latest add that had one, until the hand-out
	waiting    bool   // in the ready queue
	processing bool
	dirty      bool // added while processing: ready again at Done
}

func (it *item[K]) delayed() bool { return it.delayIdx >= 0 }

// queued reports whether the key will be handed out (again): it is
// waiting, delayed or dirty, as View.Queued says.
func (it *item[K]) queued() bool { return it.waiting || it.delayed() || it.dirty }

// newItem makes the record of key, which hashes to h and has none.
func (q *Queue[K]) newItem(key K, priority int32, h uint64) *item[K] {
	var it *item[K]
	if n := len(q.free); n > 0 {
		it = q.free[n-1]
		q.free[n-1] = nil
		q.free = q.free[:n-1]
	} else {
		// Records come in chunks: a burst of new keys (an initial list)
		// allocates once per itemChunk keys, not once per key. The spare
		// ones go to the free list, which is empty here.
		chunk := make([]item[K], itemChunk)
		for i := len(chunk) - 1; i > 0; i-- {
			q.free = append(q.free, &chunk[i])
		}
		it = &chunk[0]
	}
	*it = item[K]{key: key, priority: priority, delayIdx: -1}
	q.items.add(it, h)
	q.peak = max(q.peak, q.items.len())
	return it
}

// forgetItem drops the record of a key that is no longer queued or
// processing; h is the hash of its key.
func (q *Queue[K]) forgetItem(it *item[K], h uint64) {
	q.items.remove(it, h)
	var zero item[K]
	*it = zero
	// Keep records for reuse up to the high-water mark of live keys (at
	// least minFreeItems), so that keys coming and going allocate nothing.
	// The list is grown to that mark at once: as a burst drains it would
	// otherwise grow by doubling, several large allocations that cost a
	// tenth of the drain (S3's drain of 100,000 keys, 1 and 8 workers).
	// That holds 8 bytes per key of the peak from the burst's first Done
	// instead of as its keys finish; the rebuild below gives them back.
	if keep := max(minFreeItems, q.peak); len(q.free) < keep {
		if len(q.free) == cap(q.free) {
			q.free = slices.Grow(q.free, keep-len(q.free))
		}
		q.free = append(q.free, it)
	}
	// The index does not shrink as it empties: once a large burst has
	// drained, rebuild the mostly empty index and trim the records kept
	// for reuse, so that their memory goes back to the heap. Smaller
	// indexes are kept as they are, since rebuilding them would cost more
	// than they hold.
	//
	// A burst has drained when the index has fallen to an eighth of its
	// peak, whatever keys it left behind (retries, keys in flight); the
	// rebuilt index can be rebuilt again as the rest drains (each time at
	// most an eighth of the one before). A queue whose bursts come back
	// again and again would regrow what it gave back each time: after an
	// index has grown again (to twice its size at the last rebuild), each
	// rebuild waits for twice as many forgotten records as the one before,
	// so that such a queue rebuilds a handful of times, not once per
	// burst.
	q.forgets++
	if q.peak <= mapshrink.Floor || q.items.len() >= q.peak/8 {
		return
	}
	need := uint64(q.peak - q.peak/8)
	grown := q.peak > 2*q.rebuiltAt
	if grown {
		need <<= min(q.rebuilds, 32)
	}
	if q.forgets < need {
		return
	}
	if grown {
		q.rebuilds++
	}
	q.forgets = 0
	q.items.shrink()
	n := q.items.len()
	q.peak = n
	q.rebuiltAt = n
	keep := max(minFreeItems, n)
	if len(q.free) > keep {
		clear(q.free[keep:])
		q.free = append([]*item[K](nil), q.free[:keep]...)
	}
}

// itemChunk is how many key records newItem allocates at once. A chunk is
// freed when none of its records is in use or kept for reuse; after a
// burst drains, the few kept for reuse pin at most that many chunks.
const itemChunk = 8

// maxDeadline is the latest deadline the queue computes, with headroom so
// that deadline arithmetic cannot overflow.
const maxDeadline = math.MaxInt64 / 2

// minFreeItems is how many recycled records are kept for reuse even when
// few keys are live.
const minFreeItems = 1024
