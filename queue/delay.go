package queue

import "time"

// The queue keeps one timer, armed for the earliest deadline in the delay
// heap. When it fires, every key whose deadline has passed moves to the
// ready queue (or is marked dirty if it is processing), and the timer is
// re-armed for the next deadline.

// arm sets the timer to fire at deadline. q.mu is held.
func (q *Queue[K]) arm(deadline, now int64) {
	q.timerAt = deadline
	d := time.Duration(deadline - now)
	if q.timer == nil {
		q.timer = time.AfterFunc(d, q.fire)
		return
	}
	q.timer.Reset(d)
}

// rearm points the timer at the earliest remaining deadline after a delayed
// key was removed, or disarms it. q.mu is held.
func (q *Queue[K]) rearm() {
	if q.delayed.Len() == 0 {
		if q.timer != nil {
			q.timer.Stop()
		}
		q.timerAt = 0
		return
	}
	if first := q.delayed.peek().deadline; first != q.timerAt {
		q.arm(first, q.now())
	}
}

// fire runs on the timer's goroutine.
func (q *Queue[K]) fire() {
	q.mu.Lock()
	defer q.unlockAndWake()
	q.timerAt = 0
	if q.shuttingDown {
		return
	}
	now := q.now()
	for q.delayed.Len() > 0 {
		it := q.delayed.peek()
		if it.deadline > now {
			q.arm(it.deadline, now)
			return
		}
		q.delayed.pop()
		if it.processing {
			if !it.dirty {
				it.dirty = true
				q.dirty++
				q.becameDue(it)
			}
			continue
		}
		q.makeReady(it)
		q.becameDue(it)
	}
}
