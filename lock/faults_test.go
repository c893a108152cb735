package lock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/converge-go/converge/store"
)

// faultStore wraps the store one process sees, to inject that process's
// faults: an unreachable store, renewals that hang, a frozen process, a
// broken watch. Times are on the synctest clock.
type faultStore struct {
	store.Store[Record]

	mu         sync.Mutex
	failUntil  time.Time // every call fails with ErrUnavailable before this
	hangUntil  time.Time // Update waits until this or until its ctx ends
	pauseUntil time.Time // Update waits until this, deaf to its ctx
	noWatch    bool      // Watch fails with ErrUnavailable
}

func newFaultStore(s store.Store[Record]) *faultStore { return &faultStore{Store: s} }

// failFor makes every call fail for d from now.
func (f *faultStore) failFor(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failUntil = time.Now().Add(d)
}

// hangFor makes Update calls wait until d from now, or until their context
// ends, as with a store that has stopped answering.
func (f *faultStore) hangFor(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hangUntil = time.Now().Add(d)
}

// pauseFor freezes Update calls for d from now whatever their context says,
// then lets them through, as with a process stopped by a long pause with a
// renewal in flight.
func (f *faultStore) pauseFor(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pauseUntil = time.Now().Add(d)
}

func (f *faultStore) setNoWatch(v bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noWatch = v
}

func (f *faultStore) failing(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if time.Now().Before(f.failUntil) {
		return fmt.Errorf("%w: injected fault on %s", store.ErrUnavailable, op)
	}
	return nil
}

func (f *faultStore) Get(ctx context.Context, key string) (store.Object[Record], error) {
	if err := f.failing("get"); err != nil {
		return store.Object[Record]{}, err
	}
	return f.Store.Get(ctx, key)
}

func (f *faultStore) Create(ctx context.Context, key string, v Record, guards ...store.Guard) (store.Object[Record], error) {
	if err := f.failing("create"); err != nil {
		return store.Object[Record]{}, err
	}
	return f.Store.Create(ctx, key, v, guards...)
}

func (f *faultStore) Delete(ctx context.Context, key string, rev int64, guards ...store.Guard) (int64, error) {
	if err := f.failing("delete"); err != nil {
		return 0, err
	}
	return f.Store.Delete(ctx, key, rev, guards...)
}

func (f *faultStore) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[Record], error) {
	f.mu.Lock()
	noWatch := f.noWatch
	f.mu.Unlock()
	if noWatch {
		return nil, fmt.Errorf("%w: injected watch fault", store.ErrUnavailable)
	}
	if err := f.failing("watch"); err != nil {
		return nil, err
	}
	return f.Store.Watch(ctx, prefix, after)
}

func (f *faultStore) Update(ctx context.Context, key string, v Record, rev int64, guards ...store.Guard) (store.Object[Record], error) {
	f.mu.Lock()
	pause, hang := time.Until(f.pauseUntil), time.Until(f.hangUntil)
	f.mu.Unlock()
	if pause > 0 {
		<-time.After(pause)
		ctx = context.WithoutCancel(ctx)
	}
	if hang > 0 {
		select {
		case <-time.After(hang):
		case <-ctx.Done():
			return store.Object[Record]{}, ctx.Err()
		}
	}
	if err := f.failing("update"); err != nil {
		return store.Object[Record]{}, err
	}
	return f.Store.Update(ctx, key, v, rev, guards...)
}
