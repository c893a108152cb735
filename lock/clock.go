package lock

import "time"

// clock converts durations measured on a process's own monotonic clock into
// durations of the time package. A real process runs at rate 1 (the zero
// value); tests give leases other rates to simulate hosts whose clocks run
// fast (rate > 1: a local second passes in less than a second) or slow.
type clock struct {
	rate float64
}

// real returns how long the time package takes to measure d on this clock.
func (c clock) real(d time.Duration) time.Duration {
	if c.rate == 0 || c.rate == 1 {
		return d
	}
	return time.Duration(float64(d) / c.rate)
}
