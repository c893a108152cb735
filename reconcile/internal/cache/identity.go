package cache

import (
	"context"
	"errors"
	"fmt"

	"github.com/converge-go/converge/store"
)

// The cache and the identity of its store (store.Identifier). The cache
// remembers the identity of the store it listed, and checks it before it
// resumes a watch: a store of another identity (restored from a snapshot,
// or replaced) is re-listed, never resumed from a revision of the old one,
// since its revisions say nothing of the old store's (they may be lower, or
// name other writes).

// errReplaced ends a watch, or refuses to resume one, because the store now
// has another identity than the one the cache reflects.
var errReplaced = errors.New("the store has another identity than the one the cache was listed from")

// storeIdentity is what the cache knows of the identity of the store its
// cache reflects, guarded by its mu.
type storeIdentity struct {
	// id is the identity of the store the cache was listed from (or of
	// its restored state's); "" if unknown, or the store has none.
	id string
	// answered is the identity the store last answered (a list reads it
	// first, so it is known even when the list itself fails).
	answered string
	// epoch counts the stores of another identity the cache was re-listed
	// from since it was made, and epochRev is the revision of the list
	// that began the current one: every revision of a store before it is
	// reflected once that list is.
	epoch    uint64
	epochRev int64
}

// readIdentity asks the store for its identity; has is false for a store
// that has none (no store.Identifier, or errors.ErrUnsupported).
func (c *Cache[T]) readIdentity(ctx context.Context) (id string, has bool, _ error) {
	idr, ok := c.store.(store.Identifier)
	if !ok {
		return "", false, nil
	}
	id, err := idr.Identity(ctx)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("identity: %w", err)
	}
	c.mu.Lock()
	c.ident.answered = id
	c.mu.Unlock()
	return id, true, nil
}

// AnsweredIdentity returns the identity the store last answered, "" if it
// never did (or has none).
func (c *Cache[T]) AnsweredIdentity() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.ident.answered
}

// other reports whether identity id, read from the store, is another than
// the one the cache reflects (false while either is unknown).
func (c *Cache[T]) other(id string, has bool) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return has && c.ident.id != "" && id != c.ident.id
}

// sameStore checks, before a watch is resumed, that the store is still the
// one the cache reflects: errReplaced if it has another identity, the
// error of reading it if the store does not answer.
func (c *Cache[T]) sameStore(ctx context.Context) error {
	id, has, err := c.readIdentity(ctx)
	if err != nil {
		return err
	}
	if c.other(id, has) {
		c.mu.RLock()
		was := c.ident.id
		c.mu.RUnlock()
		return fmt.Errorf("%w (%s, was %s)", errReplaced, id, was)
	}
	return nil
}

// replacedBy reports whether the store, read now, has another identity
// than the cache's, and if so asks the running watch to check it (a
// store replaced behind an open watch is re-listed at once). An identity
// that cannot be read counts as the same.
func (c *Cache[T]) replacedBy(ctx context.Context) bool {
	id, has, err := c.readIdentity(ctx)
	if err != nil || !c.other(id, has) {
		return false
	}
	select {
	case c.recheck <- struct{}{}:
	default:
	}
	return true
}

// Epoch returns the current epoch (see storeIdentity).
func (c *Cache[T]) Epoch() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.ident.epoch
}
