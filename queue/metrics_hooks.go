package queue

// Optional extensions of Metrics, for exporters that must count the way
// another workqueue does (controller-runtime's, for instance). The queue
// checks for them once, when it is created; a Metrics that implements none
// of them sees no difference.

// DueMetrics is a Metrics that is also told when keys become due and when
// adds ask for a delay. Both methods are called with the queue's lock held:
// they must be fast and must not call back into the queue.
type DueMetrics interface {
	Metrics
	// Due is called when a key becomes due to be handed out: it is added
	// ready (or its delay runs out, or an add cancels its delay), or, while
	// it is processing, it is marked to be handed out again after Done.
	// A key already due is not counted again by a later add, and the
	// hand-out of a dirty key after Done is not a new Due. priority is the
	// key's priority at that moment.
	Due(priority int)
	// Delayed is called for every accepted add that asks for a positive
	// delay (AddOptions.After, or the RateLimiter's delay of a
	// rate-limited add), whether or not the key was already queued.
	Delayed()
}

// Probe reads a queue's state on demand, for an exporter that computes
// gauges at scrape time instead of on every change. A queue's View is its
// Probe.
type Probe interface {
	// Stats is View.Stats.
	Stats() Stats
	// DueByPriority is View.DueByPriority.
	DueByPriority(yield func(priority, n int))
}

// ProbeMetrics is a Metrics that is handed the View of the queue it
// measures, once, when the queue is created (by New; a zero Queue has no Metrics). A
// Metrics given to several queues in turn (a controller makes a new queue
// for each run) is handed each one; the latest is the live one.
type ProbeMetrics interface {
	Metrics
	Attach(p Probe)
}

// DueByPriority counts, by priority, the keys that are due: waiting to be
// handed out, or processing and marked dirty (handed out again after
// Done). It calls yield once per priority that has any, in no particular
// order, after releasing the queue's lock. It walks the priority levels and
// the keys in flight, not the waiting keys.
func (v View[K]) DueByPriority(yield func(priority, n int)) {
	q := v.queue()
	q.mu.Lock()
	byPriority := make(map[int]int)
	for _, l := range q.ready.levels {
		if l.live > 0 {
			byPriority[int(l.priority)] += l.live
		}
	}
	for _, it := range q.procs {
		if it.dirty {
			byPriority[int(it.priority)]++
		}
	}
	q.mu.Unlock()
	for p, n := range byPriority {
		yield(p, n)
	}
}
