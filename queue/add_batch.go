package queue

// BatchAdd is one add of an AddBatch: a key and the options AddWith would
// take with it.
type BatchAdd[K comparable] struct {
	Key     K
	Options AddOptions
}

// AddBatch adds every key of adds, in order, exactly as that sequence of
// AddWith calls would, but under one acquisition of the queue's lock for
// each run of adds without RateLimited: no Get, Done or other add runs
// between two adds of a run, and the Gets the run wakes are woken once
// all of it is in. It is the cheaper way to queue the keys of a batch of
// events. An add with RateLimited asks the RateLimiter outside the lock,
// as AddWith does, so it ends the run before it. AddBatch keeps no
// reference to adds; adds after ShutDown or during Drain are ignored.
func (q *Queue[K]) AddBatch(adds []BatchAdd[K]) {
	for len(adds) > 0 {
		if adds[0].Options.RateLimited {
			q.AddWith(adds[0].Key, adds[0].Options)
			adds = adds[1:]
			continue
		}
		n := 1
		timed := adds[0].Options.After > 0
		for n < len(adds) && !adds[n].Options.RateLimited {
			timed = timed || adds[n].Options.After > 0
			n++
		}
		q.addRun(adds[:n], timed)
		adds = adds[n:]
	}
}

// addRun adds a run of adds without RateLimited under one lock; timed says
// whether one of them has a delay, so that the clock is read once, before
// the lock as in AddWith.
func (q *Queue[K]) addRun(run []BatchAdd[K], timed bool) {
	var now int64
	early := timed && q.inited.Load()
	if early {
		now = q.now()
	}
	q.mu.Lock()
	defer q.unlockAndWake()
	q.lazyInit()
	if timed && !early {
		now = q.now() // a zero Queue's epoch was set just now
	}
	for i := range run {
		q.addLocked(run[i].Key, run[i].Options, run[i].Options.After, now)
	}
}

// Grow makes room for n more keys: adding up to n keys the queue does not
// hold then never rehashes its index of keys, so that a large burst about
// to come (the keys of an initial list) is placed in one table instead of
// being moved at every doubling. Like the memory of any burst, the room
// goes back once the keys that filled it have drained; room for keys that
// never come is kept. n <= 0 does nothing, and n is capped at 4,194,304
// keys (a table of 80 MiB), past which the index grows as keys come, as it
// does without Grow.
func (q *Queue[K]) Grow(n int) {
	if n <= 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.lazyInit()
	q.items.grow(min(n, maxGrow))
}

// maxGrow caps Grow, so that a wrong count cannot claim the heap.
const maxGrow = 1 << 22
