package drift

import (
	"context"
	"slices"
)

// poll lists the world and adds to the keys to wake those that drifted
// since the last listing, which becomes the baseline. A failed listing
// changes nothing but Err.
func (s *Source) poll(ctx context.Context) error {
	objs, err := s.list(ctx)
	if ctx.Err() != nil {
		return ctx.Err() // Start is ending: not a failure of the poll
	}
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	if err != nil {
		return err
	}
	seen := fingerprints(objs)
	if s.learned || s.opts.WakeOnFirstPoll {
		for _, key := range drifted(s.baseline, seen) {
			s.pending.add(key)
		}
	}
	s.baseline, s.learned = seen, true
	return nil
}

// drifted returns, sorted, the keys whose fingerprint differs between
// before and now, or that only one of them holds.
func drifted(before, now map[string]string) []string {
	var keys []string
	for key, fp := range now {
		if old, ok := before[key]; !ok || old != fp {
			keys = append(keys, key)
		}
	}
	for key := range before {
		if _, ok := now[key]; !ok {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return keys
}

// fingerprints returns each listed key's fingerprint. A key listed more
// than once gets one made of all of its objects', whatever their order.
func fingerprints(objs []Observed) map[string]string {
	out := make(map[string]string, len(objs))
	var shared map[string][]string // the fingerprints of keys listed twice or more
	for _, o := range objs {
		prev, dup := out[o.Key]
		if !dup {
			out[o.Key] = o.Fingerprint
			continue
		}
		if shared == nil {
			shared = make(map[string][]string)
		}
		if _, ok := shared[o.Key]; !ok {
			shared[o.Key] = []string{prev}
		}
		shared[o.Key] = append(shared[o.Key], o.Fingerprint)
	}
	for key, fps := range shared {
		slices.Sort(fps)
		out[key] = Fingerprint(fps...)
	}
	return out
}
