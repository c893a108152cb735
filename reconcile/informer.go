package reconcile

import (
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/converge-go/converge/store"
)

// informer keeps a cache of one store's objects under a prefix, fed by List
// then Watch. On a broken watch it resumes from the last revision it knows
// complete; if that revision is compacted, it re-lists and reports exactly
// the keys that changed or vanished meanwhile. While the store is
// unreachable it keeps its cache and retries with backoff: the cache is
// never cleared and never invents an object.
//
// Several keys may share a revision (one etcd transaction writes many), so
// the informer tracks two revisions: revision, the newest it has applied,
// and complete, the newest whose every change it has applied. A watch
// resumes after complete and skips the keys already applied at revision, so
// that resuming in the middle of a revision neither skips nor repeats an
// event. complete catches up with revision when a newer revision arrives or
// the watch answers a progress request (store.ProgressRequester).
type informer[T any] struct {
	store  store.Store[T]
	prefix string
	log    *slog.Logger
	// onChange is called with the changes applied to the cache, in store
	// order, batch by batch, from the informer's goroutine and without its
	// lock held. See change for what each carries. The slice is reused
	// once onChange returns.
	onChange func(changes []change[T])
	// onListing, if set, is told the number of changes a large list is
	// about to report (in chunks of reportChunk), so that their
	// consumer can make room for them at once.
	onListing func(n int)

	minBackoff, maxBackoff time.Duration
	// heartbeat is how often a quiet watch is asked for progress; a request
	// unanswered for a whole heartbeat, with nothing else heard, ends the
	// watch as unreachable.
	heartbeat time.Duration
	// wantProgress asks the running watch for a progress report (capacity 1:
	// requests coalesce).
	wantProgress chan struct{}

	mu      sync.RWMutex
	objects map[string]store.Object[T]
	// edits counts the changes made to objects and tombstones, each
	// counted under mu before it is made, so that a reader that looked a
	// key up (lookupCounted) can tell later, without mu, that the cache
	// still holds what it read.
	edits    atomic.Uint64
	indexes  map[string]*index[T]
	revision int64               // the newest revision applied
	complete int64               // the newest revision whose every change is applied
	revKeys  map[string]struct{} // keys applied at revision, while revision > complete
	// tombstones, if not nil, keep the last value of removed keys (at the
	// revision of the removal) until forgetTombstone.
	tombstones map[string]store.Object[T]
	// objectsPeak and tombstonesPeak are the sizes of objects and
	// tombstones at the end of a batch since they were last rebuilt (see
	// shrinkLocked).
	objectsPeak, tombstonesPeak int
	// published is the revision whose changes have all been passed to
	// onChange; waiters watch it, so that nothing is reported as reflected
	// before it has been queued.
	published int64
	advanced  chan struct{} // closed when published grows; nil if no one waits

	changes []change[T] // reused buffer of the changes of one batch
	listed  bool
	synced  chan struct{} // closed after the first successful list is reported
	filled  chan struct{} // closed once the first list (or a checkpoint) is in the cache, before it is reported
	fresh   chan struct{} // closed after the list that follows relist
	down    error         // why the cache is not following the store, or nil

	// ident is what the cache knows of its store's identity, and recheck
	// (capacity 1) asks the running watch to check it
	// (informer_identity.go). onReplaced, if set, is called with the
	// function that installs the list of another history (a store of
	// another identity, or rolled back: history.go) and why, and must call
	// it (the controller rebases its ledger under its own lock).
	ident      storeIdentity
	recheck    chan struct{}
	onReplaced func(install func(), why HistoryReason)
	// hist is what the cache knows of its store's histories (history.go).
	hist histories
	// journal, if not nil, keeps what a checkpoint writer needs
	// (informer_journal.go); recall starts a cache never filled from a
	// checkpoint (informer_recall.go).
	journal *journal[T]
	recall  recall
}

// change is one change of the cache. Old holds the previous object if
// HadOld; Cur the new one if HasCur (a removal has no Cur, and Old then
// carries the last value at the revision of the removal). Initial marks the
// objects of the first list.
type change[T any] struct {
	Old, Cur       store.Object[T]
	HadOld, HasCur bool
	Initial        bool
	Cause          string // the event's (store.Event.Cause)
}

// key and revision of the change.
func (c *change[T]) key() string {
	if c.HasCur {
		return c.Cur.Key
	}
	return c.Old.Key
}

func (c *change[T]) revision() int64 {
	if c.HasCur {
		return c.Cur.Revision
	}
	return c.Old.Revision
}

// pointers returns the change as the old/new pointers of predicates and
// mappers (nil for absent).
func (c *change[T]) pointers() (old, cur *store.Object[T]) {
	if c.HadOld {
		old = &c.Old
	}
	if c.HasCur {
		cur = &c.Cur
	}
	return old, cur
}

func newInformer[T any](s store.Store[T], prefix string, log *slog.Logger, heartbeat time.Duration, onChange func(changes []change[T])) *informer[T] {
	return &informer[T]{
		store:        s,
		prefix:       prefix,
		log:          log,
		onChange:     onChange,
		minBackoff:   100 * time.Millisecond,
		maxBackoff:   10 * time.Second,
		heartbeat:    heartbeat,
		wantProgress: make(chan struct{}, 1),
		recheck:      make(chan struct{}, 1),
		objects:      make(map[string]store.Object[T]),
		indexes:      make(map[string]*index[T]),
		revKeys:      make(map[string]struct{}),
		synced:       make(chan struct{}),
		filled:       make(chan struct{}),
		down:         errors.New("not listed yet"),
	}
}

// relist makes the next follow re-list, reporting what changed since the
// cache was last in step with the store. The returned channel is closed
// once that list is in.
func (in *informer[T]) relist() <-chan struct{} {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.listed = false
	if in.fresh == nil {
		in.fresh = make(chan struct{})
	}
	return in.fresh
}

// replace installs a list of the store, whose identity is id (has false:
// none known), and reports it: keys new or at another revision are
// reported as changed, keys absent from the list as removed, the rest not
// at all. The list of another history (a store of another identity than
// the cache's, or of the same one below the cache's revision: history.go)
// begins a new epoch (see storeIdentity): every key is reported, since the
// store's revisions say nothing of the ones the cache held, and the
// cache's revisions start again from the list's. A cache started from a
// checkpoint has then caught up with its store.
func (in *informer[T]) replace(objs []store.Object[T], rev int64, id string, has bool) {
	why, replaced := in.anotherHistory(id, has, rev)
	var changes []change[T]
	var complete int64
	install := func() { changes, complete = in.install(objs, rev, id, has, why) }
	if replaced && in.onReplaced != nil {
		in.onReplaced(install, why)
	} else {
		install()
	}
	in.report(changes, complete, replaced)
	in.mu.Lock()
	// A list the store answered proves it reachable: clear down before
	// the cache counts as synced, so that no reader sees a synced cache
	// still "not listed yet" (Ready failing with ErrDegraded).
	in.down = nil
	in.mu.Unlock()
	in.caughtUp()
	in.markSynced()
	in.freshListed()
}

// install puts a list in the cache (every key as changed if it begins
// another history, why not "") and returns the changes to report and the
// revision they complete.
func (in *informer[T]) install(objs []store.Object[T], rev int64, id string, has bool, why HistoryReason) ([]change[T], int64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	replaced := why != ""
	if replaced {
		in.historyBegun(why, rev)
	}
	initial := !in.isSynced()
	changes := in.changes[:0]
	cached := len(in.objects)
	// fresh: the cache was empty and the keys so far strictly increase
	// (a list is sorted by key), so none is cached yet and the lookup of
	// each, a cache miss in a large map, can be spared. A list out of
	// order ends it: from there every key is looked up.
	fresh := cached == 0
	if fresh {
		// Every listed key is new (once, in a list that keeps the
		// contract) and none can be missing: size the map and the changes
		// once instead of growing them key by key.
		in.objects = make(map[string]store.Object[T], len(objs))
		changes = slices.Grow(changes, len(objs))
	}
	for i := range objs {
		obj := &objs[i]
		fresh = fresh && (i == 0 || objs[i-1].Key < obj.Key)
		var old store.Object[T]
		var ok bool
		if !fresh {
			old, ok = in.objects[obj.Key]
		}
		if ok && old.Revision == obj.Revision && !replaced {
			continue
		}
		in.put(*obj, old, ok)
		changes = append(changes, change[T]{Old: old, HadOld: ok, Cur: *obj, HasCur: true, Initial: initial})
	}
	if cached > 0 {
		// Keys cached before the list and absent from it were removed.
		seen := make(map[string]struct{}, len(objs))
		for i := range objs {
			seen[objs[i].Key] = struct{}{}
		}
		for key, old := range in.objects {
			if _, ok := seen[key]; !ok {
				old.Revision = rev
				in.remove(old)
				changes = append(changes, change[T]{Old: old, HadOld: true, Initial: initial})
			}
		}
	}
	in.shrinkLocked()
	// A list reflects its revision whole; another store's starts afresh.
	if replaced {
		in.revision = rev
	} else {
		in.revision = max(in.revision, rev)
	}
	in.complete = in.revision
	in.resetRevKeys()
	in.listed = true
	if has {
		in.ident.id = id
	}
	if in.journal != nil {
		in.journal.listed(time.Now(), len(changes) > 0)
	}
	if !in.isFilled() {
		close(in.filled)
	}
	return changes, in.complete
}

// apply installs a batch of watch events (and progress reports). With
// trustLast, the last event's revision counts as complete (for a watch that
// cannot report progress). It reports whether the newest revision applied
// may still have keys to come.
func (in *informer[T]) apply(events []store.Event[T], trustLast bool) (partial bool) {
	in.mu.Lock()
	changes := in.changes[:0]
	caughtUp := false // a progress report proved a cache started from a checkpoint current
	if in.journal != nil {
		in.journal.served = time.Now()
	}
	for i := range events {
		ev := &events[i]
		rev := ev.Object.Revision
		if ev.Type == store.Progress {
			caughtUp = caughtUp || in.recall.active
			if rev >= in.revision {
				in.revision = rev
				in.resetRevKeys()
			}
			in.complete = max(in.complete, rev)
			continue
		}
		switch {
		case rev <= in.complete:
			continue // already reflected (a resumed watch may overlap a list)
		case rev > in.revision:
			// Events come in revision order: every revision before this
			// one is complete.
			in.complete = max(in.complete, rev-1)
			in.revision = rev
			in.resetRevKeys()
		case rev < in.revision:
			continue // cannot happen: complete >= revision-1
		default: // rev == in.revision: another key of the same revision
			if _, dup := in.revKeys[ev.Object.Key]; dup {
				continue // seen before the watch was resumed
			}
		}
		in.revKeys[ev.Object.Key] = struct{}{}
		old, had := in.objects[ev.Object.Key]
		if in.journal != nil {
			in.journal.noteBefore(ev.Object.Key, old, had)
		}
		if ev.Type == store.Deleted {
			if !had {
				continue
			}
			old.Revision = rev // the last value, at the revision of the delete
			in.remove(old)
			changes = append(changes, change[T]{Old: old, HadOld: true, Cause: ev.Cause})
			continue
		}
		in.put(ev.Object, old, had)
		changes = append(changes, change[T]{Old: old, HadOld: had, Cur: ev.Object, HasCur: true, Cause: ev.Cause})
	}
	if trustLast {
		in.complete = in.revision
	}
	partial = in.complete < in.revision
	if !partial {
		in.resetRevKeys()
	}
	in.shrinkLocked()
	complete := in.complete
	in.mu.Unlock()
	in.report(changes, complete, false)
	if caughtUp {
		in.caughtUp()
	}
	return partial
}

// report passes changes to onChange, then publishes rev: the first
// revision of a new epoch (a store of another identity) if epoch is set,
// even below the revision published before. Only the informer's goroutine
// calls it, so changes reach onChange in store order.
func (in *informer[T]) report(changes []change[T], rev int64, epoch bool) {
	if in.onListing != nil && len(changes) > reportChunk {
		in.onListing(len(changes))
	}
	// A list reaches onChange in chunks, so that the keys of its first
	// objects are queued (and reconciled) before the last are recorded.
	for rest := changes; len(rest) > 0; {
		n := min(len(rest), reportChunk)
		in.onChange(rest[:n])
		rest = rest[n:]
	}
	clear(changes)
	if cap(changes) > 4*maxBatch {
		changes = nil // do not keep a re-list's worth of memory
	}
	in.mu.Lock()
	in.changes = changes[:0]
	if epoch {
		in.ident.epoch++
		in.ident.epochRev = rev
	}
	if rev > in.published || epoch {
		in.published = rev
		if in.advanced != nil {
			close(in.advanced)
			in.advanced = nil
		}
	}
	in.mu.Unlock()
}

// backoff returns the wait before retry n (from 1): exponential from
// minBackoff to maxBackoff, with up to 50% random extra below the cap.
func (in *informer[T]) backoff(n int) time.Duration {
	d := in.maxBackoff
	if n < 32 && in.minBackoff<<(n-1) < in.maxBackoff {
		d = in.minBackoff << (n - 1)
	}
	return min(in.maxBackoff, d+time.Duration(rand.Int64N(int64(d)/2+1)))
}

// resetRevKeys forgets the keys applied at the current revision; a set
// grown by a large transaction is dropped rather than kept (clearing a map
// costs its capacity, not its length).
func (in *informer[T]) resetRevKeys() {
	if in.journal != nil {
		in.journal.revisionComplete()
	}
	if len(in.revKeys) > 64 {
		in.revKeys = make(map[string]struct{})
		return
	}
	clear(in.revKeys)
}

// reportChunk is how many changes of a list reach onChange at once: the
// keys of a large list's first objects are queued, and reconciled, while
// the rest are still being recorded, and observe holds the controller's
// lock, which every reconcile's start and end take, for one chunk at a
// time.
const reportChunk = 256
