package lock

import (
	"context"
	"fmt"
	"sync"

	"github.com/converge-go/converge/internal/mapshrink"
)

// Keyed is a set of mutexes, one per key, for work inside one process: holding
// key a never blocks work on key b. An entry exists only while its key is
// held or awaited, so memory follows the number of keys in use, not the
// number of keys ever seen.
//
// The zero value is ready to use. A Keyed must not be copied after first use.
// Lock order among waiters is not fair, but no wake-up is lost: Unlock hands
// the key to a waiter if there is one.
type Keyed[K comparable] struct {
	mu      sync.Mutex
	entries map[K]*keyedEntry
	// peak is the largest len(entries) since the map was last rebuilt; Go
	// maps never shrink, so Keyed rebuilds the map once it has emptied well
	// below its peak.
	peak int
}

// keyedEntry is the mutex of one key: the key is held while token holds a
// value. refs counts the holder and the waiters; the entry is removed from the
// map when it drops to zero.
type keyedEntry struct {
	token chan struct{}
	refs  int
}

// Lock waits until key is free and takes it. If ctx has ended, or ends
// first, Lock returns ctx's error (wrapped with the key) without holding the
// key. A nil ctx is refused with ErrInvalid.
func (k *Keyed[K]) Lock(ctx context.Context, key K) error {
	if err := checkContext(ctx); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("lock: key %v: %w", key, err)
	}
	k.mu.Lock()
	e := k.ref(key)
	k.mu.Unlock()

	select {
	case e.token <- struct{}{}:
		return nil
	case <-ctx.Done():
		k.mu.Lock()
		k.unref(key, e)
		k.mu.Unlock()
		return fmt.Errorf("lock: key %v: %w", key, ctx.Err())
	}
}

// TryLock takes key if it is free and reports whether it did; it never waits.
func (k *Keyed[K]) TryLock(key K) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	e := k.ref(key)
	select {
	case e.token <- struct{}{}:
		return true
	default:
		k.unref(key, e)
		return false
	}
}

// Unlock frees key, waking one waiter if there is one. Unlocking a key that
// is not locked changes nothing and returns an error matching ErrNotLocked.
// Any goroutine may unlock a key, as with sync.Mutex.
func (k *Keyed[K]) Unlock(key K) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.entries[key]
	if ok {
		select {
		case <-e.token:
			k.unref(key, e)
			return nil
		default:
		}
	}
	return fmt.Errorf("%w: %v", ErrNotLocked, key)
}

// ref returns key's entry, creating it, with one more reference. Call with
// k.mu held.
func (k *Keyed[K]) ref(key K) *keyedEntry {
	if k.entries == nil {
		k.entries = make(map[K]*keyedEntry)
	}
	e, ok := k.entries[key]
	if !ok {
		e = &keyedEntry{token: make(chan struct{}, 1)}
		k.entries[key] = e
		mapshrink.Note(k.entries, &k.peak)
	}
	e.refs++
	return e
}

// unref drops one reference to key's entry and removes the entry when none
// is left. Call with k.mu held.
func (k *Keyed[K]) unref(key K, e *keyedEntry) {
	e.refs--
	if e.refs > 0 {
		return
	}
	delete(k.entries, key)
	switch n := len(k.entries); {
	case n == 0:
		k.entries, k.peak = nil, 0
	default:
		k.entries = mapshrink.Shrunk(k.entries, &k.peak, mapshrink.Floor)
	}
}

// size returns the number of entries, for tests.
func (k *Keyed[K]) size() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.entries)
}
