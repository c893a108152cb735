package robustness_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/converge-go/converge/reconcile/internal/robustness"
	"github.com/converge-go/converge/store"
)

// lostWrites is a broken store: every tenth Update whose expected revision
// matches reports success, with the next revision, without writing. The next
// real write then returns the same revision, which the model refuses, and
// the lost write never reaches the watch.
type lostWrites struct {
	store.Store[robustness.Value]
	n atomic.Int64
}

func (s *lostWrites) Update(ctx context.Context, key string, value robustness.Value, revision int64, guards ...store.Guard) (store.Object[robustness.Value], error) {
	cur, err := s.Get(ctx, key)
	if err == nil && cur.Revision == revision && s.n.Add(1)%10 == 0 {
		rev, err := s.Revision(ctx)
		if err != nil {
			return store.Object[robustness.Value]{}, err
		}
		return store.Object[robustness.Value]{Key: key, Value: value, Revision: rev + 1, CreateRevision: cur.CreateRevision}, nil
	}
	return s.Store.Update(ctx, key, value, revision, guards...)
}

// staleReads is a broken store: Get returns the state a key had before its
// last write (as seen through this decorator) instead of the current one.
// Any client that writes a key and then reads it back with no write in
// between reads its own write's predecessor, which no linearization allows;
// a 2,000-operation run has hundreds of such pairs.
type staleReads struct {
	store.Store[robustness.Value]
	mu   sync.Mutex
	cur  map[string]*store.Object[robustness.Value] // nil: absent
	prev map[string]*store.Object[robustness.Value]
}

func newStaleReads(s store.Store[robustness.Value]) *staleReads {
	return &staleReads{Store: s, cur: map[string]*store.Object[robustness.Value]{}, prev: map[string]*store.Object[robustness.Value]{}}
}

func (s *staleReads) wrote(key string, obj *store.Object[robustness.Value]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prev[key], s.cur[key] = s.cur[key], obj
}

func (s *staleReads) Get(ctx context.Context, key string) (store.Object[robustness.Value], error) {
	s.mu.Lock()
	old, ok := s.prev[key]
	s.mu.Unlock()
	switch {
	case !ok:
		return s.Store.Get(ctx, key)
	case old == nil:
		return store.Object[robustness.Value]{}, store.ErrNotFound
	}
	return *old, nil
}

func (s *staleReads) Create(ctx context.Context, key string, value robustness.Value, guards ...store.Guard) (store.Object[robustness.Value], error) {
	obj, err := s.Store.Create(ctx, key, value, guards...)
	if err == nil {
		s.wrote(key, &obj)
	}
	return obj, err
}

func (s *staleReads) Update(ctx context.Context, key string, value robustness.Value, revision int64, guards ...store.Guard) (store.Object[robustness.Value], error) {
	obj, err := s.Store.Update(ctx, key, value, revision, guards...)
	if err == nil {
		s.wrote(key, &obj)
	}
	return obj, err
}

func (s *staleReads) Delete(ctx context.Context, key string, revision int64, guards ...store.Guard) (int64, error) {
	rev, err := s.Store.Delete(ctx, key, revision, guards...)
	if err == nil {
		s.wrote(key, nil)
	}
	return rev, err
}

// brokenMemory is the memory backend under a broken decorator.
func brokenMemory(name string, wrap func(store.Store[robustness.Value]) store.Store[robustness.Value]) robustness.Backend {
	return robustness.Backend{
		Name: name,
		Open: func(t testing.TB) (store.Store[robustness.Value], error) {
			m := store.NewMemory[robustness.Value]()
			t.Cleanup(func() { _ = m.Close() })
			return wrap(m), nil
		},
	}
}

// expectIllegal checks that the history is reported illegal and that the
// visualisation of the violation is written.
func expectIllegal(t *testing.T, r *robustness.Report) {
	t.Helper()
	res, info := robustness.Check(r.Ops, r.Start, time.Minute)
	if res != porcupine.Illegal {
		t.Fatalf("%s: history of a broken store checked %s, want %s", r.Backend, res, porcupine.Illegal)
	}
	path, err := robustness.Visualize(info, r.Start, r.Backend)
	if err != nil {
		t.Fatalf("Visualize: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Dir(path)) })
	fi, err := os.Stat(path)
	if err != nil || fi.Size() == 0 {
		t.Fatalf("visualisation %s: %v (size %d)", path, err, fi.Size())
	}
}

func TestCheckerCatchesLostWrite(t *testing.T) {
	b := brokenMemory("lost-write", func(s store.Store[robustness.Value]) store.Store[robustness.Value] {
		return &lostWrites{Store: s}
	})
	r, err := robustness.Record(t.Context(), t, b, robustness.DefaultConfig(1))
	if err != nil {
		t.Fatal(err)
	}
	expectIllegal(t, r)
	// The lost writes never reach the watch either.
	if err := robustness.ValidateWatch(r.Ops, r.Watch.Events, r.Start, r.Revision, robustness.Keys(r.Config.Keys)); !errors.Is(err, robustness.ErrWatch) {
		t.Errorf("ValidateWatch of a store that loses writes: %v, want ErrWatch", err)
	}
}

func TestCheckerCatchesStaleRead(t *testing.T) {
	b := brokenMemory("stale-read", func(s store.Store[robustness.Value]) store.Store[robustness.Value] {
		return newStaleReads(s)
	})
	r, err := robustness.Record(t.Context(), t, b, robustness.DefaultConfig(1))
	if err != nil {
		t.Fatal(err)
	}
	expectIllegal(t, r)
}

// noCompaction is a broken store whose Compact discards nothing.
type noCompaction struct{ store.Store[robustness.Value] }

func (noCompaction) Compact(context.Context, int64) error { return nil }

func TestCheckCompactionCatchesIgnoredCompaction(t *testing.T) {
	b := brokenMemory("no-compaction", func(s store.Store[robustness.Value]) store.Store[robustness.Value] {
		return noCompaction{s}
	})
	cfg := robustness.DefaultConfig(1)
	cfg.Ops = 200
	r, err := robustness.Record(t.Context(), t, b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Record wraps the store; compact the broken store underneath through
	// the same interface.
	if err := robustness.CheckCompaction(t.Context(), r.Store, r.Watch.Events, r.Revision); !errors.Is(err, robustness.ErrCompaction) {
		t.Errorf("CheckCompaction of a store that ignores compaction: %v, want ErrCompaction", err)
	}
}
