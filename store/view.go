package store

import (
	"context"
	"fmt"

	"github.com/converge-go/converge/internal/nilness"
	"github.com/converge-go/converge/store/internal/watchend"
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
//
// A View without a byte store (NewView(nil, ...), a nil pointer as raw, or
// the zero View) or with a nil pointer as its codec is invalid: every method
// returns an error matching ErrInvalid. So does a call with a nil context.
type View[T any] struct {
	raw     Store[[]byte]
	codec   Codec[T]
	invalid error // why the view cannot be used, set by NewView
}

var _ Store[int] = (*View[int])(nil)

// NewView returns a view of raw whose values are encoded with codec
// (JSON[T] if codec is nil). A nil raw store, or a nil pointer given as raw
// or codec, makes a view whose every method returns an error matching
// ErrInvalid: NewView itself never fails, so that it stays an expression.
func NewView[T any](raw Store[[]byte], codec Codec[T]) *View[T] {
	v := &View[T]{raw: raw, codec: codec}
	switch {
	case nilness.Is(raw):
		v.invalid = fmt.Errorf("%w: view of a nil byte store", ErrInvalid)
	case codec == nil:
		v.codec = JSON[T]{}
	case nilness.Is(codec):
		v.invalid = fmt.Errorf("%w: view with a nil %T codec", ErrInvalid, codec)
	}
	return v
}

// check refuses a call on an unusable view or with a nil context.
func (v *View[T]) check(ctx context.Context) error {
	switch {
	case v == nil:
		return fmt.Errorf("%w: nil *View", ErrInvalid)
	case v.invalid != nil:
		return v.invalid
	case v.raw == nil:
		return fmt.Errorf("%w: View not made by NewView", ErrInvalid)
	case ctx == nil:
		return fmt.Errorf("%w: nil context", ErrInvalid)
	}
	return nil
}

// codecOrDefault is the view's codec; a zero View has none.
func (v *View[T]) codecOrDefault() Codec[T] {
	if v.codec == nil {
		return JSON[T]{}
	}
	return v.codec
}

func (v *View[T]) encode(value T) ([]byte, error) {
	if err := ValidateValue(value); err != nil {
		return nil, err
	}
	b, err := v.codecOrDefault().Marshal(value)
	if err != nil {
		return nil, err
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

func (v *View[T]) decode(obj Object[[]byte]) (Object[T], error) {
	value, err := v.codecOrDefault().Unmarshal(obj.Value)
	if err != nil {
		return Object[T]{}, fmt.Errorf("store: key %q at revision %d: %w", obj.Key, obj.Revision, err)
	}
	return Object[T]{Key: obj.Key, Value: value, Revision: obj.Revision, CreateRevision: obj.CreateRevision}, nil
}

// Get reads and decodes key.
func (v *View[T]) Get(ctx context.Context, key string) (Object[T], error) {
	if err := v.check(ctx); err != nil {
		return Object[T]{}, err
	}
	obj, err := v.raw.Get(ctx, key)
	if err != nil {
		return Object[T]{}, err
	}
	return v.decode(obj)
}

// List reads and decodes the keys under prefix. Every key under prefix must
// hold a value of T: give each type its own prefix.
func (v *View[T]) List(ctx context.Context, prefix string) ([]Object[T], int64, error) {
	if err := v.check(ctx); err != nil {
		return nil, 0, err
	}
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
	if err := v.check(ctx); err != nil {
		return Object[T]{}, err
	}
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
	if err := v.check(ctx); err != nil {
		return Object[T]{}, err
	}
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
	if err := v.check(ctx); err != nil {
		return 0, err
	}
	return v.raw.Delete(ctx, key, revision, guards...)
}

// Revision returns the byte store's revision.
func (v *View[T]) Revision(ctx context.Context) (int64, error) {
	if err := v.check(ctx); err != nil {
		return 0, err
	}
	return v.raw.Revision(ctx)
}

// Watch watches the byte store and decodes its events. A value that does
// not decode ends the watch with that error. If the byte store's watcher
// implements ProgressRequester, so does the view's, and Progress events pass
// through unchanged.
func (v *View[T]) Watch(ctx context.Context, prefix string, after int64) (Watcher[T], error) {
	if err := v.check(ctx); err != nil {
		return nil, err
	}
	inner, err := v.raw.Watch(ctx, prefix, after)
	if err != nil {
		return nil, err
	}
	w := &viewWatcher[T]{inner: inner, events: make(chan Event[T]), end: watchend.New()}
	go w.run(v)
	if pr, ok := inner.(ProgressRequester); ok {
		return &progressViewWatcher[T]{viewWatcher: w, pr: pr}, nil
	}
	return w, nil
}

type viewWatcher[T any] struct {
	inner  Watcher[[]byte]
	events chan Event[T]
	end    watchend.End
}

// progressViewWatcher is a viewWatcher over a watcher that answers progress
// requests.
type progressViewWatcher[T any] struct {
	*viewWatcher[T]
	pr ProgressRequester
}

// RequestProgress passes the request to the byte store's watch, whose
// Progress event the view forwards in order (see ProgressRequester). It
// fails with ErrInvalid for a nil ctx, and with ErrUnavailable once the
// view's watch has ended.
func (w *progressViewWatcher[T]) RequestProgress(ctx context.Context) error {
	if err := checkProgressRequest(ctx, &w.end); err != nil {
		return err
	}
	return w.pr.RequestProgress(ctx)
}

func (w *viewWatcher[T]) run(v *View[T]) {
	// done closes before events, so that Err is set once Events is closed.
	defer close(w.events)
	defer close(w.end.Done)
	defer w.inner.Stop()
	for raw := range w.inner.Events() {
		ev := Event[T]{Type: raw.Type, Cause: raw.Cause}
		if raw.Type == Progress {
			// No value to decode.
			ev.Object.Revision = raw.Object.Revision
		} else {
			obj, err := v.decode(raw.Object)
			if err != nil {
				w.end.Err = err
				return
			}
			ev.Object = obj
		}
		select {
		case w.events <- ev:
		case <-w.end.Stop:
			return
		}
	}
	w.end.Err = w.inner.Err()
}

// Events delivers the decoded events.
func (w *viewWatcher[T]) Events() <-chan Event[T] { return w.events }

// Err says why the watch ended; it is nil while the watch runs.
func (w *viewWatcher[T]) Err() error { return w.end.Result() }

// Stop ends the watch; it is safe to call more than once, concurrently.
func (w *viewWatcher[T]) Stop() {
	w.end.RequestStop()
	w.inner.Stop()
	<-w.end.Done
}

// checkProgressRequest refuses a progress request with a nil ctx
// (ErrInvalid) or on a watch that has ended (ErrUnavailable).
func checkProgressRequest(ctx context.Context, end *watchend.End) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalid)
	}
	select {
	case <-end.Done:
		return fmt.Errorf("%w: progress request on a watch that has ended", ErrUnavailable)
	default:
		return nil
	}
}
