package httpstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// Shared is one client of a store server that serves several kinds (a
// store server keeps every kind as JSON): typed views of it (ViewOf), one
// per Go type, share its connections and its credentials, and their
// watches share one stream from the server, so an operator of five kinds
// holds one client and one watch, not five of each. Make one with
// NewShared; it is safe for concurrent use.
type Shared struct {
	raw *Client[json.RawMessage]
	hub *hub
}

// NewShared returns a shared client of the store served at baseURL; see
// New for the URL and the options.
func NewShared(baseURL string, opts ...ClientOption) (*Shared, error) {
	raw, err := New[json.RawMessage](baseURL, opts...)
	if err != nil {
		return nil, err
	}
	return &Shared{raw: raw, hub: newHub(raw)}, nil
}

// Raw returns the shared client itself, a store of JSON values.
func (s *Shared) Raw() *Client[json.RawMessage] { return s.raw }

// Close closes the client's idle connections; watches end with their
// contexts or Stop.
func (s *Shared) Close() error { return s.raw.Close() }

// View is a typed view of a Shared client: a store.Store[T], with the
// API-server layer's writes and the store's identity, whose values are
// encoded with its codec on the way out and decoded on the way in.
type View[T any] struct {
	s     *Shared
	codec store.Codec[T]
}

var (
	_ store.Store[int]            = (*View[int])(nil)
	_ store.Identifier            = (*View[int])(nil)
	_ apistore.StatusWriter[int]  = (*View[int])(nil)
	_ apistore.Replacer[int]      = (*View[int])(nil)
	_ apistore.PropagatingDeleter = (*View[int])(nil)
	_ store.Checker               = (*View[int])(nil)
)

// ViewOf returns the view of s whose values are of type T, encoded with
// codec (store.JSON[T] if nil). It must encode to JSON, as the server
// keeps it.
func ViewOf[T any](s *Shared, codec store.Codec[T]) *View[T] {
	if codec == nil {
		codec = store.JSON[T]{}
	}
	return &View[T]{s: s, codec: codec}
}

// Codec returns the view's codec (store.Encoded).
func (v *View[T]) Codec() store.Codec[T] { return v.codec }

func (v *View[T]) encode(value T) (json.RawMessage, error) {
	if err := store.ValidateValue(value); err != nil {
		return nil, err
	}
	b, err := v.codec.Marshal(value)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(b), nil
}

func (v *View[T]) decode(o store.Object[json.RawMessage]) (store.Object[T], error) {
	val, err := v.codec.Unmarshal(o.Value)
	if err != nil {
		return store.Object[T]{}, fmt.Errorf("%w: %q at revision %d does not decode as %T: %v", store.ErrInvalid, o.Key, o.Revision, val, err)
	}
	return store.Object[T]{Key: o.Key, Value: val, Revision: o.Revision, CreateRevision: o.CreateRevision}, nil
}

// decoded returns o decoded, or err.
func (v *View[T]) decoded(o store.Object[json.RawMessage], err error) (store.Object[T], error) {
	if err != nil {
		return store.Object[T]{}, err
	}
	return v.decode(o)
}

// Get reads key.
func (v *View[T]) Get(ctx context.Context, key string) (store.Object[T], error) {
	return v.decoded(v.s.raw.Get(ctx, key))
}

// List lists the objects under prefix; one that does not decode fails it.
func (v *View[T]) List(ctx context.Context, prefix string) ([]store.Object[T], int64, error) {
	objs, rev, err := v.s.raw.List(ctx, prefix)
	if err != nil {
		return nil, 0, err
	}
	out := make([]store.Object[T], len(objs))
	for i, o := range objs {
		if out[i], err = v.decode(o); err != nil {
			return nil, 0, err
		}
	}
	return out, rev, nil
}

// Revision returns the store's revision.
func (v *View[T]) Revision(ctx context.Context) (int64, error) { return v.s.raw.Revision(ctx) }

// Identity returns the store's identity (store.Identifier).
func (v *View[T]) Identity(ctx context.Context) (string, error) { return v.s.raw.Identity(ctx) }

// Create creates key.
func (v *View[T]) Create(ctx context.Context, key string, value T, guards ...store.Guard) (store.Object[T], error) {
	b, err := v.encode(value)
	if err != nil {
		return store.Object[T]{}, err
	}
	return v.decoded(v.s.raw.Create(ctx, key, b, guards...))
}

// Update updates key at revision.
func (v *View[T]) Update(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error) {
	b, err := v.encode(value)
	if err != nil {
		return store.Object[T]{}, err
	}
	return v.decoded(v.s.raw.Update(ctx, key, b, revision, guards...))
}

// UpdateStatus writes the status of value (apistore.StatusWriter).
func (v *View[T]) UpdateStatus(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error) {
	b, err := v.encode(value)
	if err != nil {
		return store.Object[T]{}, err
	}
	return v.decoded(v.s.raw.UpdateStatus(ctx, key, b, revision, guards...))
}

// Replace is the layer's update that may complete a deletion
// (apistore.Replacer).
func (v *View[T]) Replace(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], bool, error) {
	b, err := v.encode(value)
	if err != nil {
		return store.Object[T]{}, false, err
	}
	o, deleted, err := v.s.raw.Replace(ctx, key, b, revision, guards...)
	obj, err := v.decoded(o, err)
	return obj, deleted, err
}

// Delete deletes key at revision.
func (v *View[T]) Delete(ctx context.Context, key string, revision int64, guards ...store.Guard) (int64, error) {
	return v.s.raw.Delete(ctx, key, revision, guards...)
}

// DeleteWith deletes with a propagation (apistore.PropagatingDeleter).
func (v *View[T]) DeleteWith(ctx context.Context, key string, revision int64, p apistore.Propagation, guards ...store.Guard) (int64, bool, error) {
	return v.s.raw.DeleteWith(ctx, key, revision, p, guards...)
}

// Check checks key's revision and guards (store.Checker).
func (v *View[T]) Check(ctx context.Context, key string, revision int64, guards ...store.Guard) error {
	return v.s.raw.Check(ctx, key, revision, guards...)
}
