package drift

import "time"

// pending holds the keys found drifted and not yet woken, each once, in
// the order they were found.
type pending struct {
	keys   []string
	queued map[string]struct{}
}

// add queues key unless it is queued already.
func (p *pending) add(key string) {
	if _, ok := p.queued[key]; ok {
		return
	}
	if p.queued == nil {
		p.queued = make(map[string]struct{})
	}
	p.queued[key] = struct{}{}
	p.keys = append(p.keys, key)
}

// pop removes and returns the oldest key; p must not be empty.
func (p *pending) pop() string {
	key := p.keys[0]
	p.keys[0] = ""
	p.keys = p.keys[1:]
	delete(p.queued, key)
	if len(p.keys) == 0 {
		p.keys, p.queued = nil, nil // a burst's memory goes with it
	}
	return key
}

// wakeAllowed wakes the pending keys the rate limit allows now, and
// returns how long until it allows the next, if one is left.
func (s *Source) wakeAllowed(enqueue func(string)) (time.Duration, bool) {
	for len(s.pending.keys) > 0 {
		now := time.Now()
		r := s.limiter.ReserveN(now, 1)
		if d := r.DelayFrom(now); d > 0 {
			r.CancelAt(now)
			return d, true
		}
		enqueue(s.pending.pop())
	}
	return 0, false
}
