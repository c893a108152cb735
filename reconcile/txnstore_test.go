package reconcile

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/converge-go/converge/store"
)

// txnStore is a store for these tests that does what the in-memory store
// cannot: several keys written at one revision (as one etcd transaction
// does), watches cut in the middle of a revision, and silent outages (every
// call fails, while open watches stay open, deliver nothing and answer no
// progress request, as an etcd member cut off from its peers does).
// Watchers answer store.ProgressRequester.
type txnStore struct {
	mu      sync.Mutex
	rev     int64
	objects map[string]store.Object[*item]
	history []store.Event[*item]
	changed chan struct{} // closed and replaced on every change of state
	silent  bool
	paused  bool   // watches deliver nothing for now (calls work)
	cutAt   string // watches end right after delivering this key's event
	watches int    // Watch calls made
}

func newTxnStore() *txnStore {
	return &txnStore{objects: map[string]store.Object[*item]{}, changed: make(chan struct{})}
}

func (s *txnStore) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// write is one key's part of a transaction; a nil value deletes.
type write struct {
	key   string
	value *item
}

// txn applies writes at one new revision and returns it.
func (s *txnStore) txn(writes ...write) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rev++
	for _, w := range writes {
		old, had := s.objects[w.key]
		if w.value == nil {
			if !had {
				continue
			}
			delete(s.objects, w.key)
			old.Revision = s.rev
			s.history = append(s.history, store.Event[*item]{Type: store.Deleted, Object: old})
			continue
		}
		obj := store.Object[*item]{Key: w.key, Value: w.value, Revision: s.rev, CreateRevision: s.rev}
		typ := store.Created
		if had {
			obj.CreateRevision, typ = old.CreateRevision, store.Updated
		}
		s.objects[w.key] = obj
		s.history = append(s.history, store.Event[*item]{Type: typ, Object: obj})
	}
	s.notifyLocked()
	return s.rev
}

// setSilent starts or ends a silent outage.
func (s *txnStore) setSilent(silent bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.silent = silent
	s.notifyLocked()
}

// pauseWatches holds back (or releases) every watch's events.
func (s *txnStore) pauseWatches(paused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paused = paused
	s.notifyLocked()
}

// cutWatchesAfter makes every watch end with ErrUnavailable right after it
// delivers key's next event.
func (s *txnStore) cutWatchesAfter(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cutAt = key
}

func (s *txnStore) watchCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watches
}

func (s *txnStore) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.silent {
		return fmt.Errorf("%w: silent outage", store.ErrUnavailable)
	}
	return nil
}

func (s *txnStore) Get(ctx context.Context, key string) (store.Object[*item], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.Object[*item]{}, err
	}
	obj, ok := s.objects[key]
	if !ok {
		return obj, store.ErrNotFound
	}
	return obj, nil
}

func (s *txnStore) List(ctx context.Context, prefix string) ([]store.Object[*item], int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, 0, err
	}
	var out []store.Object[*item]
	for k, obj := range s.objects {
		if strings.HasPrefix(k, prefix) {
			out = append(out, obj)
		}
	}
	return out, s.rev, nil
}

func (s *txnStore) Create(ctx context.Context, key string, v *item, _ ...store.Guard) (store.Object[*item], error) {
	s.mu.Lock()
	if err := s.check(ctx); err != nil {
		s.mu.Unlock()
		return store.Object[*item]{}, err
	}
	_, had := s.objects[key]
	s.mu.Unlock()
	if had {
		return store.Object[*item]{}, store.ErrExists
	}
	s.txn(write{key, v})
	return s.Get(ctx, key)
}

func (s *txnStore) Update(ctx context.Context, key string, v *item, rev int64, _ ...store.Guard) (store.Object[*item], error) {
	cur, err := s.Get(ctx, key)
	if err != nil {
		return cur, err
	}
	if cur.Revision != rev {
		return store.Object[*item]{}, store.ErrConflict
	}
	s.txn(write{key, v})
	return s.Get(ctx, key)
}

func (s *txnStore) Delete(ctx context.Context, key string, rev int64, _ ...store.Guard) (int64, error) {
	cur, err := s.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	if cur.Revision != rev {
		return 0, store.ErrConflict
	}
	return s.txn(write{key, nil}), nil
}

func (s *txnStore) Revision(ctx context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	return s.rev, nil
}

func (s *txnStore) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[*item], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watches++
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &txnWatcher{s: s, prefix: prefix, after: after, cancel: cancel,
		events: make(chan store.Event[*item]), progress: make(chan struct{}, 1), done: make(chan struct{})}
	go w.run(ctx)
	return w, nil
}

type txnWatcher struct {
	s        *txnStore
	prefix   string
	after    int64
	cancel   context.CancelFunc
	events   chan store.Event[*item]
	progress chan struct{}
	done     chan struct{}
	err      error
}

func (w *txnWatcher) Events() <-chan store.Event[*item] { return w.events }
func (w *txnWatcher) Err() error                        { <-w.done; return w.err }
func (w *txnWatcher) Stop()                             { w.cancel(); <-w.done }

func (w *txnWatcher) RequestProgress(ctx context.Context) error {
	if ctx == nil {
		return store.ErrInvalid
	}
	select {
	case w.progress <- struct{}{}:
	default:
	}
	return nil
}

// run delivers history after w.after, then live events; while the store is
// silent it delivers nothing and answers nothing.
func (w *txnWatcher) run(ctx context.Context) {
	defer close(w.done)
	defer close(w.events)
	next := 0 // index into history
	asked := false
	for {
		w.s.mu.Lock()
		silent, changed := w.s.silent || w.s.paused, w.s.changed
		var batch []store.Event[*item]
		if !silent {
			for ; next < len(w.s.history); next++ {
				ev := w.s.history[next]
				if ev.Object.Revision > w.after && strings.HasPrefix(ev.Object.Key, w.prefix) {
					batch = append(batch, ev)
				}
			}
		}
		rev, cut := w.s.rev, w.s.cutAt
		w.s.mu.Unlock()
		for _, ev := range batch {
			select {
			case w.events <- ev:
			case <-ctx.Done():
				return
			}
			if cut != "" && ev.Object.Key == cut {
				w.s.mu.Lock()
				w.s.cutAt = ""
				w.s.mu.Unlock()
				w.err = fmt.Errorf("%w: watch cut", store.ErrUnavailable)
				return
			}
		}
		if asked && !silent {
			asked = false
			select {
			case w.events <- store.Event[*item]{Type: store.Progress, Object: store.Object[*item]{Revision: rev}}:
			case <-ctx.Done():
				return
			}
			continue
		}
		select {
		case <-changed:
		case <-w.progress:
			asked = true
		case <-ctx.Done():
			return
		}
	}
}
