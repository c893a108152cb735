package queue

// View reads a queue without changing it: how many keys are ready, where a
// key is, and listings of the keys for a debug page, a health check or a
// metrics exporter. Get one from Queue.View. A View is a small value that
// reads the live queue at each call (it is not a copy of it): making and
// copying one costs nothing, and Len and Queued allocate nothing. Every
// method is safe for concurrent use with the queue's others. The zero View
// reads an empty queue.
type View[K comparable] struct{ q *Queue[K] }

// View returns the read-only view of q.
func (q *Queue[K]) View() View[K] { return View[K]{q: q} }

// queue returns the queue v reads; for the zero View, an empty one.
func (v View[K]) queue() *Queue[K] {
	if v.q == nil {
		return new(Queue[K])
	}
	return v.q
}

// Len reports the number of keys ready to be handed out (not delayed, not
// processing).
func (v View[K]) Len() int {
	q := v.queue()
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ready.Len()
}

// ShuttingDown reports whether ShutDown or Drain has been called.
func (v View[K]) ShuttingDown() bool {
	q := v.queue()
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shuttingDown
}

// Queued reports whether key will be handed out (again): it is waiting,
// delayed, or processing and marked dirty. It is false for a key only
// processing, and for an unknown key.
func (v View[K]) Queued(key K) bool {
	q := v.queue()
	q.mu.Lock()
	defer q.mu.Unlock()
	it := q.items.get(key)
	return it != nil && it.queued()
}

// Retries reports key's retries: how many times it has been rate-limited
// since the last Forget (its RateLimiter's NumRequeues).
func (v View[K]) Retries(key K) int { return v.queue().rateLimiter().NumRequeues(key) }
