package drift

import (
	"context"
	"slices"
)

// poll lists the world and adds to the keys to wake those that drifted
// from what was expected of them (see expected). A failed listing changes
// nothing but Err.
func (s *Source) poll(ctx context.Context) error {
	s.mu.Lock()
	mark := s.expect.listing()
	s.mu.Unlock()
	objs, err := s.list(ctx)
	if ctx.Err() != nil {
		return ctx.Err() // Start is ending: not a failure of the poll
	}
	s.mu.Lock()
	s.err = err
	var woken []string
	if err == nil {
		woken = s.expect.pollListed(fingerprints(objs), mark, s.opts.WakeOnFirstPoll)
	}
	s.mu.Unlock()
	for _, key := range woken {
		s.pending.add(key)
	}
	return err
}

// fingerprints returns each listed key's fingerprint. A key listed more
// than once gets one made of all of its objects' (combined).
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
		out[key] = combined(fps)
	}
	return out
}

// combined returns the fingerprint of a key's objects, from theirs in any
// order: the one's own, or one made of them all. fps must not be empty;
// it may be sorted in place.
func combined(fps []string) string {
	if len(fps) == 1 {
		return fps[0]
	}
	slices.Sort(fps)
	return Fingerprint(fps...)
}
