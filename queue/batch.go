package queue

import (
	"context"
	"fmt"
)

// Handout is one key handed out by GetBatch, with what the adds it answers
// attached to it: their ORed AddOptions.Tags and the latest AddOptions.Hint
// among them (zero if none had one). It is built in one place, whichever
// of Get and GetBatch hands the key out, and its Key is what Done takes
// back.
type Handout[K comparable] struct {
	Key  K
	Tags uint32
	Hint uint32
}

// GetBatch hands out up to max ready keys at once, each with the tags and
// hint of its adds: for a consumer whose work is cheaper in batches (one
// call to a batch API for many keys), or, with max 1, for one that reads a
// key's tags and hint (a worker keeps buf from one call to the next, so that
// GetBatch allocates nothing in steady state). It
// blocks as Get does until a key is ready, then takes it and, without
// waiting, every further key ready at that moment up to max, in hand-out
// order (priority, then first come). The keys are appended to buf, which
// is returned. Each key is handed out exactly as Get would hand it out: it
// is processing until its own Done, and no other Get or GetBatch receives
// it meanwhile. It returns ctx's error if ctx ends before a key is ready,
// and ErrShutDown as Get does. A nil ctx or a max below 1 is refused with
// an error matching ErrInvalid.
func (q *Queue[K]) GetBatch(ctx context.Context, max int, buf []Handout[K]) ([]Handout[K], error) {
	if max < 1 {
		return buf, fmt.Errorf("%w: GetBatch of %d keys", ErrInvalid, max)
	}
	h, err := q.get(ctx)
	if err != nil {
		return buf, err
	}
	buf = append(buf, h)
	if max == 1 {
		return buf, nil
	}
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	for n := 1; n < max && q.ready.Len() > 0 && (!q.shuttingDown || q.draining); n++ {
		buf = append(buf, q.take(now))
	}
	q.checkDrained()
	return buf, nil
}
