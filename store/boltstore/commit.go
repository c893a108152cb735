package boltstore

import (
	"sync"

	bolt "go.etcd.io/bbolt"
)

// committer shares transactions between concurrent writes (group commit).
// A write that finds no commit in progress becomes the committer: it
// commits every write pending at that moment in one transaction, synced
// once, and then hands the role to the first write that arrived meanwhile,
// which commits everything pending by then. Under load, each commit carries
// the writes that queued up during the previous one, so the batch grows
// with the number of writers and no write waits for a timer; a write that
// is alone commits at once.
type committer struct {
	db *bolt.DB

	mu         sync.Mutex
	pending    []*commitReq
	spare      []*commitReq // the previous batch's slice, for reuse
	committing bool
}

// commitReq is one write waiting for its commit.
type commitReq struct {
	fn   func(*bolt.Tx) error
	err  error
	lead bool          // woken to commit rather than because it was committed
	wake chan struct{} // receives exactly one wake-up
}

// run applies fn in a transaction shared with concurrent writes, and
// returns once that transaction has committed (or failed).
//
// fn may run more than once, in transactions that are rolled back: if a
// shared transaction fails, each of its writes is committed alone, so that
// one failing write cannot fail the others. fn must therefore record its
// outcome afresh on every run, and must return an error only for a failure
// of the file, not for a condition that does not hold.
func (c *committer) run(fn func(*bolt.Tx) error) error {
	req := &commitReq{fn: fn, wake: make(chan struct{}, 1)}
	c.mu.Lock()
	c.pending = append(c.pending, req)
	if c.committing {
		c.mu.Unlock()
		<-req.wake
		if !req.lead {
			return req.err
		}
		c.mu.Lock()
	}
	c.committing = true
	batch := c.pending
	c.pending = c.spare[:0]
	c.mu.Unlock()

	c.commit(batch, req)

	c.mu.Lock()
	clear(batch)
	c.spare = batch[:0]
	if len(c.pending) > 0 {
		next := c.pending[0]
		next.lead = true
		next.wake <- struct{}{}
	} else {
		c.committing = false
	}
	c.mu.Unlock()
	return req.err
}

// update runs fn in a guarded read-write transaction. A panic (bbolt's,
// on a damaged file) rolls the transaction back and becomes the write's
// error, matching ErrCorrupt, so that it cannot leave the committer stuck
// with every later write waiting.
func (c *committer) update(fn func(*bolt.Tx) error) error {
	return update(c.db, fn)
}

// commit runs batch in one transaction, or each write alone if that fails,
// and wakes every write of the batch but self.
func (c *committer) commit(batch []*commitReq, self *commitReq) {
	err := c.update(func(tx *bolt.Tx) error {
		for _, r := range batch {
			if err := r.fn(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && len(batch) > 1 {
		for _, r := range batch {
			r.err = c.update(r.fn)
		}
	} else {
		for _, r := range batch {
			r.err = err
		}
	}
	for _, r := range batch {
		if r != self {
			r.wake <- struct{}{}
		}
	}
}
