package queue

import "time"

// Metrics receives a queue's measurements. Methods are called with the
// queue's lock held: they must be fast and must not call back into the
// queue. A nil Metrics in Options costs nothing.
//
// Unfinished work and the longest-running key are not pushed: View.Stats
// computes them on demand, so a metrics exporter reads them at scrape time
// and the queue runs no ticker goroutine.
type Metrics interface {
	// Added counts an accepted add (Add, AddWith, each add of AddBatch),
	// including one that was deduplicated.
	Added()
	// Depth reports the number of ready keys after it changed.
	Depth(ready int)
	// QueueLatency reports how long a key waited between becoming ready
	// and being handed out.
	QueueLatency(d time.Duration)
	// WorkDuration reports how long a key was processed (Get to Done).
	WorkDuration(d time.Duration)
	// Retried counts a rate-limited add.
	Retried()
}

// Stats is a point-in-time summary of a queue.
type Stats struct {
	Ready      int // keys waiting to be handed out
	Delayed    int // keys waiting for a deadline (not processing)
	Processing int // keys handed out and not Done
	// UnfinishedWork is the sum of the time every processing key has been
	// in flight; LongestRunning the longest of them.
	UnfinishedWork time.Duration
	LongestRunning time.Duration
}

// Stats summarises the queue. It walks the keys in flight under the queue
// lock, not the others.
func (v View[K]) Stats() Stats {
	q := v.queue()
	q.mu.Lock()
	defer q.mu.Unlock()
	s := Stats{Ready: q.ready.Len(), Processing: len(q.procs)}
	now := q.now()
	s.Delayed = q.delayed.Len()
	for _, it := range q.procs {
		d := time.Duration(now - it.at)
		s.UnfinishedWork += d
		s.LongestRunning = max(s.LongestRunning, d)
		if it.delayed() {
			s.Delayed-- // counted as processing
		}
	}
	return s
}
