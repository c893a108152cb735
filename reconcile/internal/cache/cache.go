// Package cache keeps a cache of one store's objects under a prefix, fed by
// List then Watch, and tells its hooks what changed. A controller reads its
// objects from it; another store's source maps its changes to keys.
//
// Guarantees:
//   - On a broken watch the cache resumes from the last revision it knows
//     complete; if that revision is compacted, it re-lists and reports
//     exactly the keys that changed or vanished meanwhile: no change lost,
//     none reported twice.
//   - Over a store that implements store.Differ (the in-memory store,
//     bolt, views over them) the watch is store.WatchCatchingUp's: one
//     that falls behind catches up by difference, never by a re-list. A
//     key changed meanwhile is reported once, at its state now (a key
//     deleted and created again meanwhile as one change, as a re-list
//     reports it); a key the cache held and the store deleted meanwhile
//     is removed and reported as a removal with its last value (kept as a
//     tombstone with Options.Tombstones), as a watched delete is. Over
//     any other store a watch that falls behind resumes, or re-lists.
//   - While the store is unreachable it keeps its objects and retries with
//     backoff: it is never cleared and never invents an object. A watch
//     that stays open and silent is detected within two heartbeats.
//   - A store of another history (another identity, or rolled back below
//     the cache's revision) is re-listed whole, never resumed.
//   - Hooks.Changed receives every change in store order; a revision is
//     published (Revision, WaitRevision) only once its changes have been
//     passed to it.
//
// The cache knows nothing of what its observers keep: an Observer is told
// of each edit under the cache's lock, and Locked lets it read the cache
// at the same point (package reconcile's checkpoint journal is one).
package cache

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/converge-go/converge/store"
)

// Cache keeps one store's objects under a prefix (see the package doc).
// Make it with New; Run follows the store, one Run at a time.
//
// Several keys may share a revision (one etcd transaction writes many), so
// the cache tracks two revisions: revision, the newest it has applied, and
// complete, the newest whose every change it has applied. A watch resumes
// after complete and skips the keys already applied at revision, so that
// resuming in the middle of a revision neither skips nor repeats an event.
// complete catches up with revision when a newer revision arrives or the
// watch answers a progress request (store.ProgressRequester).
type Cache[T any] struct {
	store  store.Store[T]
	prefix string
	log    *slog.Logger
	hooks  Hooks[T]
	obs    Observer[T] // never nil (noObserver without one)

	minBackoff, maxBackoff time.Duration
	// heartbeat is how often a quiet watch is asked for progress; a request
	// unanswered for a whole heartbeat, with nothing else heard, ends the
	// watch as unreachable.
	heartbeat time.Duration
	// wantProgress asks the running watch for a progress report (capacity 1:
	// requests coalesce).
	wantProgress chan struct{}

	mu      sync.RWMutex
	objects map[string]entry[T] // each keyed by its object's key
	// edits counts the changes made to objects and tombstones, each
	// counted under mu before it is made, so that a reader that looked a
	// key up (LookupCounted) can tell later, without mu, that the cache
	// still holds what it read.
	edits    atomic.Uint64
	indexes  map[string]*index[T]
	revision int64               // the newest revision applied
	complete int64               // the newest revision whose every change is applied
	revKeys  map[string]struct{} // keys applied at revision, while revision > complete
	// tombstones, if not nil, keep the last value of removed keys (at the
	// revision of the removal) until ForgetTombstone.
	tombstones map[string]store.Object[T]
	// objectsPeak and tombstonesPeak are the sizes of objects and
	// tombstones at the end of a batch since they were last rebuilt (see
	// shrinkLocked).
	objectsPeak, tombstonesPeak int
	// published is the revision whose changes have all been passed to
	// Hooks.Changed; waiters watch it, so that nothing is reported as
	// reflected before it has been queued.
	published int64
	advanced  chan struct{} // closed when published grows; nil if no one waits

	changes []Change[T] // reused buffer of the changes of one batch
	listed  bool
	synced  chan struct{} // closed after the first successful list is reported
	filled  chan struct{} // closed once the first list (or a restored state) is in the cache, before it is reported
	fresh   chan struct{} // closed after the list that follows Relist
	down    error         // why the cache is not following the store, or nil

	// ident is what the cache knows of its store's identity, and recheck
	// (capacity 1) asks the running watch to check it (identity.go).
	ident   storeIdentity
	recheck chan struct{}
	// hist is what the cache knows of its store's histories (history.go).
	hist histories
	// rest is the start from a saved state (restore.go).
	rest restoring
}

// Options configure a Cache. Store is required; the rest may be zero.
type Options[T any] struct {
	// Prefix is the part of the store the cache holds.
	Prefix string
	// Logger receives the cache's logs (none if nil).
	Logger *slog.Logger
	// Heartbeat is how often a quiet watch is asked to prove itself alive
	// (a second if not positive).
	Heartbeat time.Duration
	// Tombstones makes the cache keep the last value of every key it
	// removes until ForgetTombstone.
	Tombstones bool
	// Indexes name functions that map an object to index values (ByIndex).
	Indexes map[string]func(obj store.Object[T]) []string
	// Hooks are told what changed, without the cache's lock held.
	Hooks Hooks[T]
	// Observer, if not nil, is told of each edit with the lock held.
	Observer Observer[T]
	// Restore, if set, may start a cache never filled from a saved state
	// (restore.go).
	Restore Restore
}

// Change is one change of the cache. Old holds the previous object if
// HadOld; Cur the new one if HasCur (a removal has no Cur, and Old then
// carries the last value at the revision of the removal). Initial marks the
// objects of the first list (or of a restored state).
type Change[T any] struct {
	Old, Cur       store.Object[T]
	HadOld, HasCur bool
	Initial        bool
	Cause          string // the event's (store.Event.Cause)
}

// Key returns the key of the change.
func (c *Change[T]) Key() string {
	if c.HasCur {
		return c.Cur.Key
	}
	return c.Old.Key
}

// Revision returns the revision of the change.
func (c *Change[T]) Revision() int64 {
	if c.HasCur {
		return c.Cur.Revision
	}
	return c.Old.Revision
}

// Pointers returns the change as the old/new pointers of predicates and
// mappers (nil for absent).
func (c *Change[T]) Pointers() (old, cur *store.Object[T]) {
	if c.HadOld {
		old = &c.Old
	}
	if c.HasCur {
		cur = &c.Cur
	}
	return old, cur
}

// New returns a cache of s under opts.Prefix; nothing is read before Run.
func New[T any](s store.Store[T], opts Options[T]) *Cache[T] {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = time.Second
	}
	c := &Cache[T]{
		store:        s,
		prefix:       opts.Prefix,
		log:          opts.Logger,
		hooks:        opts.Hooks,
		obs:          opts.Observer,
		minBackoff:   100 * time.Millisecond,
		maxBackoff:   10 * time.Second,
		heartbeat:    opts.Heartbeat,
		wantProgress: make(chan struct{}, 1),
		recheck:      make(chan struct{}, 1),
		objects:      make(map[string]entry[T]),
		indexes:      make(map[string]*index[T]),
		revKeys:      make(map[string]struct{}),
		synced:       make(chan struct{}),
		filled:       make(chan struct{}),
		down:         errors.New("not listed yet"),
		rest:         restoring{Restore: opts.Restore},
	}
	if c.obs == nil {
		c.obs = noObserver[T]{}
	}
	if opts.Tombstones {
		c.tombstones = make(map[string]store.Object[T])
	}
	for name, fn := range opts.Indexes {
		c.indexes[name] = newIndex(fn)
	}
	return c
}

// Hooks returns the cache's hooks, which may be changed before Run.
func (c *Cache[T]) Hooks() *Hooks[T] { return &c.hooks }

// Relist makes the next follow re-list, reporting what changed since the
// cache was last in step with the store. The returned channel is closed
// once that list is in.
func (c *Cache[T]) Relist() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listed = false
	if c.fresh == nil {
		c.fresh = make(chan struct{})
	}
	return c.fresh
}
