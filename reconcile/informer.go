package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/converge-go/converge/internal/ctxtime"
	"github.com/converge-go/converge/store"
)

// informer keeps a cache of one store's objects under a prefix, fed by List
// then Watch. On a broken watch it resumes from the last revision it saw;
// if that revision is compacted, it re-lists and reports exactly the keys
// that changed or vanished meanwhile. While the store is unreachable it keeps
// its cache and retries with backoff: the cache is never cleared and never
// invents an object.
type informer[T any] struct {
	store  store.Store[T]
	prefix string
	log    *slog.Logger
	// onChange is called with the changes applied to the cache, in store
	// order, batch by batch, from the informer's goroutine and without its
	// lock held. See change for what each carries. The slice is reused
	// once onChange returns.
	onChange func(changes []change[T])

	minBackoff, maxBackoff time.Duration

	mu       sync.RWMutex
	objects  map[string]store.Object[T]
	indexes  map[string]*index[T]
	revision int64 // the store revision the cache's contents reflect
	// published is the revision whose changes have all been passed to
	// onChange; waiters watch it, so that nothing is reported as reflected
	// before it has been queued.
	published int64
	advanced  chan struct{} // closed when published grows; nil if no one waits

	changes []change[T] // reused buffer of the changes of one batch
	listed  bool
	synced  chan struct{} // closed after the first successful list
	fresh   chan struct{} // closed after the list that follows relist
	down    error         // why the cache is not following the store, or nil
}

// change is one change of the cache. Old holds the previous object if
// HadOld; Cur the new one if HasCur (a removal has no Cur, and Old then
// carries the last value at the revision of the removal). Initial marks the
// objects of the first list.
type change[T any] struct {
	Old, Cur       store.Object[T]
	HadOld, HasCur bool
	Initial        bool
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

func newInformer[T any](s store.Store[T], prefix string, log *slog.Logger, onChange func(changes []change[T])) *informer[T] {
	return &informer[T]{
		store:      s,
		prefix:     prefix,
		log:        log,
		onChange:   onChange,
		minBackoff: 100 * time.Millisecond,
		maxBackoff: 10 * time.Second,
		objects:    make(map[string]store.Object[T]),
		indexes:    make(map[string]*index[T]),
		synced:     make(chan struct{}),
		down:       errors.New("not listed yet"),
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

// run follows the store until ctx ends.
func (in *informer[T]) run(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		connected, err := in.follow(ctx)
		if ctx.Err() != nil {
			return
		}
		if connected {
			failures = 0
		}
		in.setDown(err)
		if errors.Is(err, store.ErrCompacted) {
			// The resume point is gone: re-list at once.
			in.mu.Lock()
			in.listed = false
			in.mu.Unlock()
			in.log.Info("watch history compacted; re-listing", "error", err)
			continue
		}
		if errors.Is(err, store.ErrLagging) {
			// Fell behind but nothing is lost: resume at once.
			continue
		}
		failures++
		d := in.backoff(failures)
		in.log.Warn("store unavailable; keeping the cache and retrying", "error", err, "retry_in", d)
		if ctxtime.Sleep(ctx, d) != nil {
			return
		}
	}
}

// follow lists if needed, then watches until the watch ends, returning
// whether it got as far as watching, and why it ended.
func (in *informer[T]) follow(ctx context.Context) (connected bool, _ error) {
	in.mu.RLock()
	listed, rev := in.listed, in.revision
	in.mu.RUnlock()
	if !listed {
		objs, listRev, err := in.store.List(ctx, in.prefix)
		if err != nil {
			return false, fmt.Errorf("list: %w", err)
		}
		in.replace(objs, listRev)
		rev = listRev
	}
	w, err := in.store.Watch(ctx, in.prefix, rev)
	if err != nil {
		return false, fmt.Errorf("watch: %w", err)
	}
	defer w.Stop()
	in.setDown(nil)
	batch := make([]store.Event[T], 0, maxBatch)
	for ev := range w.Events() {
		// Apply what has already arrived in one go: one lock for many
		// events, so that the cache keeps up with busy writers.
		batch = append(batch[:0], ev)
	more:
		for len(batch) < maxBatch {
			select {
			case ev, ok := <-w.Events():
				if !ok {
					break more
				}
				batch = append(batch, ev)
			default:
				break more
			}
		}
		in.apply(batch)
	}
	if err := w.Err(); err != nil {
		return true, fmt.Errorf("watch: %w", err)
	}
	return true, fmt.Errorf("watch: %w: ended without an error", store.ErrUnavailable)
}

// maxBatch bounds the watch events applied under one lock.
const maxBatch = 256

// replace installs a list: keys new or at another revision are reported as
// changed, keys absent from the list as removed, the rest not at all.
func (in *informer[T]) replace(objs []store.Object[T], rev int64) {
	in.mu.Lock()
	initial := !in.isSynced()
	changes := in.changes[:0]
	seen := make(map[string]struct{}, len(objs))
	for i := range objs {
		obj := &objs[i]
		seen[obj.Key] = struct{}{}
		old, ok := in.objects[obj.Key]
		if ok && old.Revision == obj.Revision {
			continue
		}
		in.set(*obj)
		changes = append(changes, change[T]{Old: old, HadOld: ok, Cur: *obj, HasCur: true, Initial: initial})
	}
	for key, old := range in.objects {
		if _, ok := seen[key]; !ok {
			in.remove(key)
			old.Revision = rev
			changes = append(changes, change[T]{Old: old, HadOld: true, Initial: initial})
		}
	}
	in.revision = max(in.revision, rev)
	in.listed = true
	in.mu.Unlock()

	in.report(changes, rev)
	in.mu.Lock()
	if initial {
		close(in.synced)
	}
	if in.fresh != nil {
		close(in.fresh)
		in.fresh = nil
	}
	in.mu.Unlock()
}

// apply installs a batch of watch events.
func (in *informer[T]) apply(events []store.Event[T]) {
	in.mu.Lock()
	changes := in.changes[:0]
	for i := range events {
		obj := &events[i].Object
		if obj.Revision <= in.revision {
			continue // already reflected (a resumed watch may overlap a list)
		}
		in.revision = obj.Revision
		old, had := in.objects[obj.Key]
		if events[i].Type == store.Deleted {
			if !had {
				continue
			}
			in.remove(obj.Key)
			old.Revision = obj.Revision // the last value, at the revision of the delete
			changes = append(changes, change[T]{Old: old, HadOld: true})
			continue
		}
		in.set(*obj)
		changes = append(changes, change[T]{Old: old, HadOld: had, Cur: *obj, HasCur: true})
	}
	rev := in.revision
	in.mu.Unlock()
	in.report(changes, rev)
}

// report passes changes to onChange, then publishes rev. Only the
// informer's goroutine calls it, so changes reach onChange in store order.
func (in *informer[T]) report(changes []change[T], rev int64) {
	if len(changes) > 0 {
		in.onChange(changes)
	}
	clear(changes)
	if cap(changes) > 4*maxBatch {
		changes = nil // do not keep a re-list's worth of memory
	}
	in.mu.Lock()
	in.changes = changes[:0]
	if rev > in.published {
		in.published = rev
		if in.advanced != nil {
			close(in.advanced)
			in.advanced = nil
		}
	}
	in.mu.Unlock()
}

// revisionChanged returns the published revision and a channel closed
// when it grows.
func (in *informer[T]) revisionChanged() (int64, <-chan struct{}) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.advanced == nil {
		in.advanced = make(chan struct{})
	}
	return in.published, in.advanced
}

func (in *informer[T]) set(obj store.Object[T]) {
	if old, ok := in.objects[obj.Key]; ok {
		for _, ix := range in.indexes {
			ix.remove(old)
		}
	}
	in.objects[obj.Key] = obj
	for _, ix := range in.indexes {
		ix.add(obj)
	}
}

func (in *informer[T]) remove(key string) {
	if old, ok := in.objects[key]; ok {
		for _, ix := range in.indexes {
			ix.remove(old)
		}
	}
	delete(in.objects, key)
}

func (in *informer[T]) isSynced() bool {
	select {
	case <-in.synced:
		return true
	default:
		return false
	}
}

func (in *informer[T]) setDown(err error) {
	in.mu.Lock()
	in.down = err
	in.mu.Unlock()
}

// health reports why the cache is not following the store, or nil.
func (in *informer[T]) health() error {
	in.mu.RLock()
	defer in.mu.RUnlock()
	return in.down
}

func (in *informer[T]) get(key string) (store.Object[T], bool) {
	in.mu.RLock()
	defer in.mu.RUnlock()
	obj, ok := in.objects[key]
	return obj, ok
}

// currentRevision returns the revision whose changes have all been
// reported.
func (in *informer[T]) currentRevision() int64 {
	in.mu.RLock()
	defer in.mu.RUnlock()
	return in.published
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
