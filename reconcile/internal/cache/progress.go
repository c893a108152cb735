package cache

import (
	"context"
	"math/rand/v2"
	"time"
)

// How far the cache follows its store: the revision it has published, its
// first list, and why it does not follow the store, each under its lock.

// Progress is how far the cache has reported its store: Published, in the
// epoch (see storeIdentity) that began at EpochRev.
type Progress struct {
	Published, EpochRev int64
	Epoch               uint64
}

// ProgressNow returns how far the cache has reported its store, and a
// channel closed when that changes.
func (c *Cache[T]) ProgressNow() (Progress, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.advanced == nil {
		c.advanced = make(chan struct{})
	}
	return Progress{Published: c.published, EpochRev: c.ident.epochRev, Epoch: c.ident.epoch}, c.advanced
}

// Revision returns the revision whose changes have all been reported.
func (c *Cache[T]) Revision() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.published
}

// WaitRevision blocks until the cache reflects the store at rev or later,
// or ctx ends (its error). It asks the watch to prove its progress, since
// rev may have been written outside the cache's view.
func (c *Cache[T]) WaitRevision(ctx context.Context, rev int64) error {
	for {
		p, advanced := c.ProgressNow()
		if p.Published >= rev {
			return nil
		}
		c.AskProgress()
		select {
		case <-advanced:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// AskProgress asks the running watch to prove how far it has delivered, so
// that a revision written outside the cache's view is known reflected.
func (c *Cache[T]) AskProgress() {
	select {
	case c.wantProgress <- struct{}{}:
	default:
	}
}

// Synced returns a channel closed once the store's state is in the cache
// and reported (a restored cache: once it has caught up with its store).
func (c *Cache[T]) Synced() <-chan struct{} { return c.synced }

// IsSynced reports whether Synced is closed.
func (c *Cache[T]) IsSynced() bool { return closed(c.synced) }

// markSynced closes synced, once: the store's state is in the cache.
func (c *Cache[T]) markSynced() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.IsSynced() {
		close(c.synced)
	}
}

// Filled returns a channel closed once the first list (or a restored
// state) is in the cache, before its changes are reported.
func (c *Cache[T]) Filled() <-chan struct{} { return c.filled }

// isFilled reports whether a list or a restored state is in the cache.
func (c *Cache[T]) isFilled() bool { return closed(c.filled) }

// closed reports whether ch is closed (nothing is ever sent on it).
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// freshListed closes the channel Relist returned, if any.
func (c *Cache[T]) freshListed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fresh != nil {
		close(c.fresh)
		c.fresh = nil
	}
}

func (c *Cache[T]) setDown(err error) {
	c.mu.Lock()
	c.down = err
	c.mu.Unlock()
}

// Health reports why the cache is not following the store, or nil.
func (c *Cache[T]) Health() error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.down
}

// Backoff returns the wait before retry n (from 1) of a store or a source
// that failed: exponential from 100ms to 10s, with up to 50% random extra
// below the cap.
func (c *Cache[T]) Backoff(n int) time.Duration {
	d := c.maxBackoff
	if n < 32 && c.minBackoff<<(n-1) < c.maxBackoff {
		d = c.minBackoff << (n - 1)
	}
	return min(c.maxBackoff, d+time.Duration(rand.Int64N(int64(d)/2+1)))
}
