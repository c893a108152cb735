package reconcile

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// Through returns s, a store of another kind than the controller's (the
// Backups a schedule makes, the Pods of a replica set), written as
// req.Store writes the controller's own objects: every write carries the
// guards req.Store adds (the term of leadership, the shard's claim), so a
// deposed owner's write fails with store.ErrGuardFailed; and the echo of
// a write made through it, seen by a store source of the same controller
// (FromStore over s), neither wakes the parent nor counts as a change by
// someone else. Changes made by anyone else still wake it. Reads pass
// through; a request not made by a controller (a test's) gets s as it is.
//
// Guards are checked by the store that holds them: fencing across kinds
// needs s and the lease (or shard records) in one store (views of one
// byte store, or one served store).
func Through[C, T any](req Request[T], s store.Store[C]) store.Store[C] {
	f, ok := req.Store.(fencer)
	if !ok || s == nil {
		return s
	}
	return &through[C]{Store: s, f: f}
}

// fencer is what Through needs of a Request.Store: the guards a write
// must carry, and the controller's table of echoes to skip.
type fencer interface {
	throughGuards(guards []store.Guard) ([]store.Guard, error)
	echoTable() *echoes
	watched(s any, key string) bool
}

func (w *writer[T]) throughGuards(guards []store.Guard) ([]store.Guard, error) {
	return w.fence(guards)
}

func (w *writer[T]) echoTable() *echoes { return &w.c.echoes }

// watched reports whether a store source of the controller follows key
// in s: only then is an echo awaited, so the table holds no entry that
// nothing would clear.
func (w *writer[T]) watched(s any, key string) bool {
	for _, src := range w.c.opts.Sources {
		if ws, ok := src.(interface{ watches(any, string) bool }); ok && ws.watches(s, key) {
			return true
		}
	}
	return false
}

func (g guardedWriter[T]) throughGuards(guards []store.Guard) ([]store.Guard, error) {
	return g.writer.fence(append(guards, g.guards...))
}

// through is a store of another kind written through a controller.
type through[C any] struct {
	store.Store[C]
	f fencer
}

var _ apistore.StatusWriter[int] = (*through[int])(nil)

func (t *through[C]) Create(ctx context.Context, key string, v C, guards ...store.Guard) (store.Object[C], error) {
	g, err := t.f.throughGuards(guards)
	if err != nil {
		return store.Object[C]{}, err
	}
	obj, err := t.Store.Create(ctx, key, v, g...)
	t.wrote(key, obj.Revision, false, err)
	return obj, err
}

func (t *through[C]) Update(ctx context.Context, key string, v C, rev int64, guards ...store.Guard) (store.Object[C], error) {
	g, err := t.f.throughGuards(guards)
	if err != nil {
		return store.Object[C]{}, err
	}
	obj, err := t.Store.Update(ctx, key, v, rev, g...)
	t.wrote(key, obj.Revision, false, err)
	return obj, err
}

// UpdateStatus is s's status write (apistore.StatusWriter), fenced, or
// errors.ErrUnsupported if s has none.
func (t *through[C]) UpdateStatus(ctx context.Context, key string, v C, rev int64, guards ...store.Guard) (store.Object[C], error) {
	sw, ok := t.Store.(apistore.StatusWriter[C])
	if !ok {
		return store.Object[C]{}, errors.ErrUnsupported
	}
	g, err := t.f.throughGuards(guards)
	if err != nil {
		return store.Object[C]{}, err
	}
	obj, err := sw.UpdateStatus(ctx, key, v, rev, g...)
	t.wrote(key, obj.Revision, false, err)
	return obj, err
}

// Delete deletes key, fenced. Its echo is the deletion of the object at
// rev; over the API-server layer a delete that only marks the object is
// an update, whose echo wakes the parent.
func (t *through[C]) Delete(ctx context.Context, key string, rev int64, guards ...store.Guard) (int64, error) {
	g, err := t.f.throughGuards(guards)
	if err != nil {
		return 0, err
	}
	at, err := t.Store.Delete(ctx, key, rev, g...)
	t.wrote(key, rev, true, err)
	return at, err
}

// wrote records a successful write's echo to skip.
func (t *through[C]) wrote(key string, rev int64, deleted bool, err error) {
	if err == nil && rev > 0 && t.f.watched(t.Store, key) {
		t.f.echoTable().wrote(t.Store, key, rev, deleted)
	}
}

// echoes is a controller's table of writes made through Through whose
// echoes its store sources skip: per store and key, the revision written
// (for a delete, the revision of the object deleted, which the deletion's
// change carries as its old value). Invariant: an entry exists only for a
// key a store source of the controller follows (see writer.watched), and
// goes when that source sees a change of the key at or after its
// revision: the echo itself (skipped) or a later change (not skipped).
// So it holds at most the writes whose echoes are still on their way.
// The zero echoes is empty and ready.
type echoes struct {
	mu sync.Mutex
	m  map[echoKey]echoWrite
}

type echoKey struct {
	store any
	key   string
}

type echoWrite struct {
	rev     int64
	deleted bool
}

func (e *echoes) wrote(s any, key string, rev int64, deleted bool) {
	if !canKey(s) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = make(map[echoKey]echoWrite)
	}
	e.m[echoKey{s, key}] = echoWrite{rev: rev, deleted: deleted}
}

// echoed reports whether a change of key in s, at rev (for a deletion:
// the revision of its old value), is the echo of a write through Through,
// and clears the entry a change at or after it settles.
func (e *echoes) echoed(s any, key string, rev int64, deleted bool) bool {
	if e == nil || !canKey(s) {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	k := echoKey{s, key}
	w, ok := e.m[k]
	switch {
	case !ok || rev < w.rev:
		return false
	case rev == w.rev && deleted == w.deleted:
		delete(e.m, k)
		return true
	}
	delete(e.m, k)
	return false
}

// size is the number of echoes awaited.
func (e *echoes) size() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.m)
}

// canKey reports whether s can key a map (a store that is a pointer,
// as stores are; a struct holding a slice is not).
func canKey(s any) bool {
	return s != nil && reflect.TypeOf(s).Comparable()
}

// sameStore reports whether a and b are the same store.
func sameStore(a, b any) bool { return canKey(a) && canKey(b) && a == b }

// watches reports whether the source follows key in s.
func (s *storeSource[C]) watches(st any, key string) bool {
	return sameStore(any(s.store), st) && strings.HasPrefix(key, s.prefix)
}

func (n *named) watches(s any, key string) bool {
	ws, ok := n.src.(interface{ watches(any, string) bool })
	return ok && ws.watches(s, key)
}
