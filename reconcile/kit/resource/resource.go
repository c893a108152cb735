package resource

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// Resource is a ready-made stored type for the common case: a desired Spec
// written by users, an observed Status written by the controller, and the
// bookkeeping that tells them apart. Stores hold *Resource values; in JSON
// a Resource is {"metadata":{...},"spec":...,"status":...,
// "observedGeneration":N,"conditions":[...]}, the shape apistore.JSONKind
// reads, so that a store server applies the API-server layer to it
// without knowing its Go type.
//
// Write the spec with PutSpec and the status with WriteStatus: the
// generation is bumped whenever the spec changes, and WriteStatus records,
// in ObservedGeneration, the generation the controller reconciled, so that
// ObservedGeneration < Generation means "not yet reconciled". Over a store
// wrapped by store/apistore (give it Kind), the layer owns the generation
// and the deletion mark whoever writes, a status write never touches the
// spec, and finalizers hold a deletion until the controller's cleanup
// (Finalize) is done.
//
// Values read from a store may be shared with it (the in-memory store shares
// them): never change one in place. Both helpers copy before changing.
type Resource[Spec, Status any] struct {
	// Meta is the metadata: Generation (1 when created, bumped by every
	// write that changes Spec), Finalizers, the Deletion mark and Owners
	// (see apistore.Meta). Its fields are promoted: r.Generation.
	apistore.Meta `json:"metadata"`
	Spec          Spec   `json:"spec"`
	Status        Status `json:"status"`
	// ObservedGeneration is the Generation the controller last reconciled.
	ObservedGeneration int64 `json:"observedGeneration"`
	// Conditions hold at most one condition per Type.
	Conditions []Condition `json:"conditions,omitempty"`
}

// clone returns a copy of r that can be changed without touching r: the
// struct and its slices are copied; Spec and Status are copied by
// assignment, so the copy must only replace them, not change them in place.
func (r *Resource[Spec, Status]) clone() *Resource[Spec, Status] {
	c := *r
	c.Conditions = slices.Clone(r.Conditions)
	c.Meta = cloneMeta(r.Meta)
	return &c
}

// cloneMeta returns a copy of m sharing nothing with it.
func cloneMeta(m apistore.Meta) apistore.Meta {
	m.Finalizers = slices.Clone(m.Finalizers)
	m.Owners = slices.Clone(m.Owners)
	if m.Deletion != nil {
		d := *m.Deletion
		m.Deletion = &d
	}
	return m
}

// errSpecUnchanged ends a CreateOrUpdate round that found the spec already
// in place.
var errSpecUnchanged = errors.New("resource: spec unchanged")

// PutSpec makes key hold spec, creating the resource (at Generation 1) if it
// does not exist, and returns the resource as stored.
//
// If writing spec would change nothing the store keeps, PutSpec writes
// nothing and returns the stored object. Nothing changes when the stored
// spec equals spec (go-cmp equality, looking into unexported fields, with
// nil and empty slices and maps equal) or, on a store that keeps values
// encoded, when the stored resource and the one PutSpec would write encode
// to the same bytes (see "What counts as a change" in WriteStatus). So a
// spec that does not survive the codec exactly (a number inside a
// map[string]any reads back as a float64) is written once, not at every
// call. Otherwise PutSpec writes spec, bumps
// Generation and keeps Status, ObservedGeneration and Conditions, through
// store.CreateOrUpdate: a write that races with another is retried against
// the new value, so no write is lost. opts configure those retries; a key
// still contended after them returns an error matching store.ErrConflict.
//
// spec is stored as given: do not change it (or anything it refers to)
// afterwards. A nil store, a bad key, a stored nil value or a spec the
// store's codec refuses (store.JSON refuses a string holding invalid UTF-8)
// returns an error matching store.ErrInvalid; store errors are returned as
// they come.
func PutSpec[Spec, Status any](ctx context.Context, s store.Store[*Resource[Spec, Status]], key string, spec Spec, opts ...store.ModifyOptions) (store.Object[*Resource[Spec, Status]], error) {
	type object = store.Object[*Resource[Spec, Status]]
	if s == nil {
		return object{}, fmt.Errorf("%w: PutSpec: nil store", store.ErrInvalid)
	}
	// The spec can be found equal by CreateOrUpdate's read and changed again
	// before the read that fetches the object to return: each such round
	// needs two concurrent writes, so a few rounds suffice.
	for range store.DefaultAttempts {
		cur, err := s.Get(ctx, key)
		switch {
		case err == nil:
			if cur.Value == nil {
				return object{}, fmt.Errorf("%w: PutSpec: %q holds a nil value", store.ErrInvalid, key)
			}
			same, err := store.Unchanged(s, cur.Value, cur.Value.withSpec(spec))
			if err != nil {
				return object{}, err
			}
			if same {
				return cur, nil
			}
		case !errors.Is(err, store.ErrNotFound):
			return object{}, err
		}
		obj, err := store.CreateOrUpdate(ctx, s, key, func(cur *Resource[Spec, Status], exists bool) (*Resource[Spec, Status], error) {
			if !exists {
				return &Resource[Spec, Status]{Meta: apistore.Meta{Generation: 1}, Spec: spec}, nil
			}
			if cur == nil {
				return nil, fmt.Errorf("%w: PutSpec: %q holds a nil value", store.ErrInvalid, key)
			}
			next := cur.withSpec(spec)
			same, err := store.Unchanged(s, cur, next)
			if err != nil {
				return nil, err
			}
			if same {
				return nil, errSpecUnchanged
			}
			next.Generation = cur.Generation + 1
			return next, nil
		}, opts...)
		if !errors.Is(err, errSpecUnchanged) {
			return obj, err
		}
	}
	return object{}, fmt.Errorf("%w: PutSpec: %q kept changing under concurrent writes", store.ErrConflict, key)
}

// WriteStatus records what the controller observed when it reconciled obj:
// it sets Status to status, ObservedGeneration to obj.Value.Generation and
// merges conds into Conditions (SetCondition, with time.Now() as the
// transition time unless a condition carries its own), then writes the
// result with a compare-and-swap Update against obj.Revision.
//
// obj must be the object that was reconciled, as read from s. If it has been
// written since (a spec change, say), the store's error is returned as is
// (errors.Is(err, store.ErrConflict)) and nothing is written: the controller
// reconciles the new version instead. If the write would change nothing
// the store keeps, WriteStatus writes nothing and returns obj, so that a
// reconcile finding nothing to do takes no action.
//
// What counts as a change: the resource WriteStatus would write differs
// from obj.Value, compared with go-cmp (looking into unexported fields,
// nil and empty slices and maps equal, times compared as instants, NaN
// equal to NaN), and,
// if the store keeps values encoded, its encoding differs from obj.Value's.
// The encoding is made with the store's codec when the store says which
// (store.Encoded: a store.View does), with store.JSON for other stores
// except *store.Memory, which keeps Go values and is judged by go-cmp
// alone. A status that does not survive the codec exactly, such as a
// map[string]any whose numbers read back as float64, is therefore written
// once and then found unchanged: WriteStatus never rewrites the same status
// at every reconcile. (On another store that does not implement
// store.Encoded, such as one with a codec other than JSON or a wrapper
// around a *store.Memory, a change JSON cannot see, to a field tagged
// json:"-" or unexported, is not written: a codec-backed store should
// implement store.Encoded, and a wrapper should forward it.)
//
// status is stored as given: do not change it afterwards. A nil store, a nil
// obj.Value, a revision below 1, a condition with an empty type or an
// unknown status, or a status the store's codec refuses (store.JSON refuses
// a string holding invalid UTF-8, such as raw process output: store it as
// []byte) returns an error matching store.ErrInvalid and writes nothing.
func WriteStatus[Spec, Status any](ctx context.Context, s store.Store[*Resource[Spec, Status]], obj store.Object[*Resource[Spec, Status]], status Status, conds ...Condition) (store.Object[*Resource[Spec, Status]], error) {
	type object = store.Object[*Resource[Spec, Status]]
	switch {
	case s == nil:
		return object{}, fmt.Errorf("%w: WriteStatus: nil store", store.ErrInvalid)
	case obj.Value == nil:
		return object{}, fmt.Errorf("%w: WriteStatus: %q: nil resource", store.ErrInvalid, obj.Key)
	case obj.Revision < 1:
		return object{}, fmt.Errorf("%w: WriteStatus: %q: revision %d: pass the object as read from the store", store.ErrInvalid, obj.Key, obj.Revision)
	}
	cur := obj.Value
	now := time.Now()
	merged := cur.Conditions
	for _, c := range conds {
		if err := c.validate(); err != nil {
			return object{}, fmt.Errorf("WriteStatus: %q: %w", obj.Key, err)
		}
		merged = SetCondition(merged, c, now)
	}
	next := cur.clone()
	next.Status = status
	next.ObservedGeneration = cur.Generation
	next.Conditions = merged
	same, err := store.Unchanged(s, cur, next)
	if err != nil {
		return object{}, fmt.Errorf("WriteStatus: %q: %w", obj.Key, err)
	}
	if same {
		return obj, nil
	}
	if sw, ok := s.(apistore.StatusWriter[*Resource[Spec, Status]]); ok {
		// The API-server layer (or a client of one): a status write that
		// cannot touch the spec. A client of a served store without the
		// layer says it cannot (errors.ErrUnsupported), having written
		// nothing.
		written, err := sw.UpdateStatus(ctx, obj.Key, next, obj.Revision)
		if !errors.Is(err, errors.ErrUnsupported) {
			return written, err
		}
	}
	return s.Update(ctx, obj.Key, next, obj.Revision)
}

// withSpec returns a copy of r holding spec, at r's generation.
func (r *Resource[Spec, Status]) withSpec(spec Spec) *Resource[Spec, Status] {
	next := r.clone()
	next.Spec = spec
	return next
}
