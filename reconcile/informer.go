package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

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
	// onChange is called, with the informer's lock held, for every change
	// applied to the cache: old is nil for a new key, cur nil for a removed
	// one. initial is true for the objects of the first list.
	onChange func(old, cur *store.Object[T], initial bool)

	minBackoff, maxBackoff time.Duration

	mu       sync.RWMutex
	objects  map[string]store.Object[T]
	indexes  map[string]*index[T]
	revision int64         // the store revision the cache reflects
	advanced chan struct{} // closed and replaced when revision grows
	listed   bool
	synced   chan struct{} // closed after the first successful list
	fresh    chan struct{} // closed after the list that follows relist
	down     error         // why the cache is not following the store, or nil
}

func newInformer[T any](s store.Store[T], prefix string, log *slog.Logger, onChange func(old, cur *store.Object[T], initial bool)) *informer[T] {
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
		advanced:   make(chan struct{}),
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
		if sleep(ctx, d) != nil {
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
	for ev := range w.Events() {
		in.apply(ev)
	}
	if err := w.Err(); err != nil {
		return true, fmt.Errorf("watch: %w", err)
	}
	return true, fmt.Errorf("watch: %w: ended without an error", store.ErrUnavailable)
}

// replace installs a list: keys new or at another revision are reported as
// changed, keys absent from the list as removed, the rest not at all.
func (in *informer[T]) replace(objs []store.Object[T], rev int64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	initial := !in.isSynced()
	seen := make(map[string]struct{}, len(objs))
	for i := range objs {
		obj := objs[i]
		seen[obj.Key] = struct{}{}
		old, ok := in.objects[obj.Key]
		if ok && old.Revision == obj.Revision {
			continue
		}
		in.set(obj)
		if ok {
			in.onChange(&old, &obj, initial)
		} else {
			in.onChange(nil, &obj, initial)
		}
	}
	for key, old := range in.objects {
		if _, ok := seen[key]; !ok {
			in.remove(key)
			old.Revision = rev
			in.onChange(&old, nil, initial)
		}
	}
	in.advance(rev)
	in.listed = true
	if initial {
		close(in.synced)
	}
	if in.fresh != nil {
		close(in.fresh)
		in.fresh = nil
	}
}

// apply installs one watch event.
func (in *informer[T]) apply(ev store.Event[T]) {
	in.mu.Lock()
	defer in.mu.Unlock()
	obj := ev.Object
	if obj.Revision <= in.revision {
		return // already reflected (a resumed watch may overlap a list)
	}
	in.advance(obj.Revision)
	old, had := in.objects[obj.Key]
	var oldp *store.Object[T]
	if had {
		oldp = &old
	}
	if ev.Type == store.Deleted {
		if !had {
			return
		}
		in.remove(obj.Key)
		old.Revision = obj.Revision // the last value, at the revision of the delete
		in.onChange(&old, nil, false)
		return
	}
	in.set(obj)
	in.onChange(oldp, &obj, false)
}

// advance moves the cache's revision forward and wakes its waiters. in.mu
// is held.
func (in *informer[T]) advance(rev int64) {
	if rev <= in.revision {
		return
	}
	in.revision = rev
	close(in.advanced)
	in.advanced = make(chan struct{})
}

// revisionChanged returns the revision and a channel closed when it grows.
func (in *informer[T]) revisionChanged() (int64, <-chan struct{}) {
	in.mu.RLock()
	defer in.mu.RUnlock()
	return in.revision, in.advanced
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

func (in *informer[T]) currentRevision() int64 {
	in.mu.RLock()
	defer in.mu.RUnlock()
	return in.revision
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

// sleep waits for d or ctx's end.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
