package robustness

import (
	"math"
	"math/rand/v2"
	"sync"
)

// Schedule decides, from a seed, at which counts of an event (a write, a
// request, a frame) a fault fires, so that how many faults a run sees does
// not depend on timing or scheduling: only which calls the counts fall on
// does. The first firing falls within the first Every counts; each later
// one follows the one before by 1 to 2*Every-1 counts, drawn uniformly
// (Every on average). So a run that counts n events sees at least one
// firing once n ≥ Every, and at least n/(2*Every-1) of them. A nil
// *Schedule never fires. A Schedule is safe for concurrent use.
type Schedule struct {
	mu    sync.Mutex
	rng   *rand.Rand
	every int64
	count int64 // events counted
	next  int64 // the count the next firing falls on
}

// NewSchedule returns a schedule firing once every `every` counts on
// average, its draws seeded by seed and stream; every < 1 returns nil
// (never).
func NewSchedule(every int, seed, stream uint64) *Schedule {
	if every < 1 {
		return nil
	}
	s := &Schedule{rng: rand.New(rand.NewPCG(seed, stream)), every: int64(every)}
	s.next = 1 + s.rng.Int64N(s.every)
	return s
}

// ScheduleFor returns the schedule of a fault of probability p: nil for
// p ≤ 0, else one firing every round(1/p) counts on average.
func ScheduleFor(p float64, seed, stream uint64) *Schedule {
	if !(p > 0) {
		return nil
	}
	return NewSchedule(int(max(1, math.Round(1/p))), seed, stream)
}

// Every returns the mean number of counts between firings (0 for nil).
func (s *Schedule) Every() int {
	if s == nil {
		return 0
	}
	return int(s.every)
}

// Fires counts one event and reports whether the schedule fires on it.
func (s *Schedule) Fires() bool { return s.FiresWithin(1) == 0 }

// FiresWithin counts up to n events, stopping at the first one the
// schedule fires on, and returns that event's index (0 to n-1), or -1 if
// it fires on none of the n (all of them counted).
func (s *Schedule) FiresWithin(n int) int {
	if s == nil || n <= 0 {
		return -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.count+int64(n) < s.next {
		s.count += int64(n)
		return -1
	}
	i := s.next - s.count - 1
	s.count = s.next
	s.next += 1 + s.rng.Int64N(2*s.every-1)
	return int(i)
}
