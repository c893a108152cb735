package bench

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/converge-go/converge/internal/ctxtime"

	"k8s.io/client-go/util/workqueue"

	"github.com/converge-go/converge/store"
)

// clientGoRetry is how long the client-go loop's reflector waits before it
// lists or watches again after a store error other than a lagging or
// compacted watch (which it handles at once).
const clientGoRetry = 100 * time.Millisecond

// RunClientGo runs the end-to-end workload as a hand-written client-go
// controller, the sample-controller pattern without an API server: one
// reflector goroutine lists then watches the store into a map cache and
// adds the key of every change to a
// workqueue.NewTypedRateLimitingQueueWithConfig[string] with the default
// controller rate limiter; workers Get a key, read the cached object, run
// the shared reconciler body, then Forget (success) or AddRateLimited
// (error), and Done.
//
// Like a client-go informer, the reflector resumes a watch that ended from
// the last revision it saw, and on a compacted history re-lists and adds
// every listed key (an informer's Replace calls the update handler for
// every object).
func RunClientGo(s E2EStore, keys []string, workers int) (E2EResult, error) {
	cs := &countingStore{E2EStore: s}
	t := newTracker(len(keys))
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{},
	)
	cache := &mapCache{objects: make(map[string]store.Object[*Pair])}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	mallocs := t.begin()
	var wg sync.WaitGroup
	reflected := make(chan struct{})
	go func() {
		defer close(reflected)
		runReflector(ctx, cs, cache, q)
	}()
	for range workers {
		wg.Go(func() {
			for {
				key, shutdown := q.Get()
				if shutdown {
					return
				}
				var err error
				if obj, ok := cache.get(key); ok {
					err = t.reconcile(ctx, cs, obj)
				}
				if err == nil {
					q.Forget(key)
				} else {
					q.AddRateLimited(key)
				}
				q.Done(key)
			}
		})
	}
	<-t.settled
	res := t.result(mallocs)

	cancel()
	<-reflected
	q.ShutDown()
	wg.Wait()
	res.Lists, res.Watches = cs.lists.Load(), cs.watches.Load()
	return res, nil
}

// mapCache is the client-go loop's cache: the latest object of every key
// and the store revision it reflects.
type mapCache struct {
	mu      sync.RWMutex
	objects map[string]store.Object[*Pair]
	rev     int64
}

func (c *mapCache) get(key string) (store.Object[*Pair], bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	obj, ok := c.objects[key]
	return obj, ok
}

func (c *mapCache) revision() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rev
}

// replace installs a list.
func (c *mapCache) replace(objs []store.Object[*Pair], rev int64) {
	m := make(map[string]store.Object[*Pair], len(objs))
	for _, obj := range objs {
		m[obj.Key] = obj
	}
	c.mu.Lock()
	c.objects, c.rev = m, rev
	c.mu.Unlock()
}

// apply installs one watch event.
func (c *mapCache) apply(ev store.Event[*Pair]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev.Type == store.Deleted {
		delete(c.objects, ev.Object.Key)
	} else {
		c.objects[ev.Object.Key] = ev.Object
	}
	c.rev = ev.Object.Revision
}

// runReflector lists s into cache, then watches it, adding the key of every
// listed object and of every change to q, until ctx ends.
func runReflector(ctx context.Context, s E2EStore, cache *mapCache, q workqueue.TypedInterface[string]) {
	listed := false
	for ctx.Err() == nil {
		if !listed {
			objs, rev, err := s.List(ctx, "")
			if err != nil {
				if waitRetry(ctx) != nil {
					return
				}
				continue
			}
			cache.replace(objs, rev)
			for _, obj := range objs {
				q.Add(obj.Key)
			}
			listed = true
		}
		w, err := s.Watch(ctx, "", cache.revision())
		if errors.Is(err, store.ErrCompacted) {
			listed = false
			continue
		}
		if err != nil {
			if waitRetry(ctx) != nil {
				return
			}
			continue
		}
		for ev := range w.Events() {
			cache.apply(ev)
			q.Add(ev.Object.Key)
		}
		err = w.Err()
		w.Stop()
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, store.ErrCompacted):
			listed = false
		case errors.Is(err, store.ErrLagging):
			// Nothing lost: resume from the cache's revision at once.
		default:
			if waitRetry(ctx) != nil {
				return
			}
		}
	}
}

// waitRetry waits clientGoRetry, or returns ctx's error if it ends first.
func waitRetry(ctx context.Context) error { return ctxtime.Sleep(ctx, clientGoRetry) }
