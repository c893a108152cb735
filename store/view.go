package store

import (
	"context"
	"fmt"
	"sync"
)

// View is a Store[T] over a Store[[]byte] that encodes values with a Codec.
// Several views of different types over one byte store share its keys, its
// revision counter and its guards: a write through one view can be guarded
// on a key written through another. That is how fencing works across types:
// keep a lease record (lock.Record) and the objects written on the lease's
// behalf in views of one byte store, and guard the writes on the record.
//
// Values are encoded on every write and decoded on every read, so unlike
// the in-memory store a View hands out fresh values that callers may keep
// and change.
type View[T any] struct {
	raw   Store[[]byte]
	codec Codec[T]
}

var _ Store[int] = (*View[int])(nil)

// NewView returns a view of raw whose values are encoded with codec
// (JSON[T] if nil).
func NewView[T any](raw Store[[]byte], codec Codec[T]) *View[T] {
	if codec == nil {
		codec = JSON[T]{}
	}
	return &View[T]{raw: raw, codec: codec}
}

func (v *View[T]) encode(value T) ([]byte, error) {
	if err := ValidateValue(value); err != nil {
		return nil, err
	}
	b, err := v.codec.Marshal(value)
	if err != nil {
		return nil, err
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

func (v *View[T]) decode(obj Object[[]byte]) (Object[T], error) {
	value, err := v.codec.Unmarshal(obj.Value)
	if err != nil {
		return Object[T]{}, fmt.Errorf("store: key %q at revision %d: %w", obj.Key, obj.Revision, err)
	}
	return Object[T]{Key: obj.Key, Value: value, Revision: obj.Revision, CreateRevision: obj.CreateRevision}, nil
}

// Get reads and decodes key.
func (v *View[T]) Get(ctx context.Context, key string) (Object[T], error) {
	obj, err := v.raw.Get(ctx, key)
	if err != nil {
		return Object[T]{}, err
	}
	return v.decode(obj)
}

// List reads and decodes the keys under prefix. Every key under prefix must
// hold a value of T: give each type its own prefix.
func (v *View[T]) List(ctx context.Context, prefix string) ([]Object[T], int64, error) {
	objs, rev, err := v.raw.List(ctx, prefix)
	if err != nil {
		return nil, 0, err
	}
	out := make([]Object[T], len(objs))
	for i, obj := range objs {
		if out[i], err = v.decode(obj); err != nil {
			return nil, 0, err
		}
	}
	return out, rev, nil
}

// Create encodes value and creates key.
func (v *View[T]) Create(ctx context.Context, key string, value T, guards ...Guard) (Object[T], error) {
	b, err := v.encode(value)
	if err != nil {
		return Object[T]{}, err
	}
	obj, err := v.raw.Create(ctx, key, b, guards...)
	if err != nil {
		return Object[T]{}, err
	}
	return Object[T]{Key: obj.Key, Value: value, Revision: obj.Revision, CreateRevision: obj.CreateRevision}, nil
}

// Update encodes value and updates key at revision.
func (v *View[T]) Update(ctx context.Context, key string, value T, revision int64, guards ...Guard) (Object[T], error) {
	b, err := v.encode(value)
	if err != nil {
		return Object[T]{}, err
	}
	obj, err := v.raw.Update(ctx, key, b, revision, guards...)
	if err != nil {
		return Object[T]{}, err
	}
	return Object[T]{Key: obj.Key, Value: value, Revision: obj.Revision, CreateRevision: obj.CreateRevision}, nil
}

// Delete deletes key at revision.
func (v *View[T]) Delete(ctx context.Context, key string, revision int64, guards ...Guard) (int64, error) {
	return v.raw.Delete(ctx, key, revision, guards...)
}

// Revision returns the byte store's revision.
func (v *View[T]) Revision(ctx context.Context) (int64, error) { return v.raw.Revision(ctx) }

// Watch watches the byte store and decodes its events. A value that does
// not decode ends the watch with that error.
func (v *View[T]) Watch(ctx context.Context, prefix string, after int64) (Watcher[T], error) {
	inner, err := v.raw.Watch(ctx, prefix, after)
	if err != nil {
		return nil, err
	}
	w := &viewWatcher[T]{inner: inner, events: make(chan Event[T]), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run(v)
	return w, nil
}

type viewWatcher[T any] struct {
	inner    Watcher[[]byte]
	events   chan Event[T]
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	err      error
}

func (w *viewWatcher[T]) run(v *View[T]) {
	// done closes before events, so that Err is set once Events is closed.
	defer close(w.events)
	defer close(w.done)
	defer w.inner.Stop()
	for raw := range w.inner.Events() {
		obj, err := v.decode(raw.Object)
		if err != nil {
			w.err = err
			return
		}
		select {
		case w.events <- Event[T]{Type: raw.Type, Object: obj}:
		case <-w.stop:
			return
		}
	}
	w.err = w.inner.Err()
}

// Events delivers the decoded events.
func (w *viewWatcher[T]) Events() <-chan Event[T] { return w.events }

// Err says why the watch ended; it is nil while the watch runs.
func (w *viewWatcher[T]) Err() error {
	select {
	case <-w.done:
		return w.err
	default:
		return nil
	}
}

// Stop ends the watch; it is safe to call more than once, concurrently.
func (w *viewWatcher[T]) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	w.inner.Stop()
	<-w.done
}
