package reconcile

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/converge-go/converge/store"
)

// Resource is a ready-made stored type for the common case: a desired Spec
// written by users, an observed Status written by the controller, and the
// bookkeeping that tells them apart. Stores hold *Resource values.
//
// Write the spec with PutSpec and the status with WriteStatus: PutSpec bumps
// Generation whenever the spec changes, and WriteStatus records, in
// ObservedGeneration, the generation the controller reconciled, so that
// ObservedGeneration < Generation means "not yet reconciled".
//
// Values read from a store may be shared with it (the in-memory store shares
// them): never change one in place. Both helpers copy before changing.
type Resource[Spec, Status any] struct {
	// Generation counts the changes of Spec: 1 when created, bumped by every
	// PutSpec that changes it.
	Generation int64  `json:"generation"`
	Spec       Spec   `json:"spec"`
	Status     Status `json:"status"`
	// ObservedGeneration is the Generation the controller last reconciled.
	ObservedGeneration int64 `json:"observedGeneration"`
	// Conditions hold at most one condition per Type.
	Conditions []Condition `json:"conditions,omitempty"`
}

// clone returns a copy of r that can be changed without touching r: the
// struct and the Conditions slice are copied; Spec and Status are copied by
// assignment, so the copy must only replace them, not change them in place.
func (r *Resource[Spec, Status]) clone() *Resource[Spec, Status] {
	c := *r
	c.Conditions = slices.Clone(r.Conditions)
	return &c
}

// errSpecUnchanged ends a CreateOrUpdate round that found the spec already
// in place.
var errSpecUnchanged = errors.New("reconcile: spec unchanged")

// PutSpec makes key hold spec, creating the resource (at Generation 1) if it
// does not exist, and returns the resource as stored.
//
// If the stored spec already equals spec (go-cmp equality, looking into
// unexported fields, with nil and empty slices and maps equal) PutSpec writes
// nothing and returns the stored object. Otherwise it writes spec, bumps
// Generation and keeps Status, ObservedGeneration and Conditions, through
// store.CreateOrUpdate: a write that races with another is retried against
// the new value, so no write is lost. opts configure those retries; a key
// still contended after them returns an error matching store.ErrConflict.
//
// spec is stored as given: do not change it (or anything it refers to)
// afterwards. A nil store, a bad key or a stored nil value returns an error
// matching store.ErrInvalid; store errors are returned as they come.
func PutSpec[Spec, Status any](ctx context.Context, s store.Store[*Resource[Spec, Status]], key string, spec Spec, opts ...store.ModifyOption) (store.Object[*Resource[Spec, Status]], error) {
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
			same, err := equalValues(cur.Value.Spec, spec)
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
				return &Resource[Spec, Status]{Generation: 1, Spec: spec}, nil
			}
			if cur == nil {
				return nil, fmt.Errorf("%w: PutSpec: %q holds a nil value", store.ErrInvalid, key)
			}
			same, err := equalValues(cur.Spec, spec)
			if err != nil {
				return nil, err
			}
			if same {
				return nil, errSpecUnchanged
			}
			next := cur.clone()
			next.Spec = spec
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
// reconciles the new version instead. If status, observed generation and
// conditions would all stay the same, WriteStatus writes nothing and returns
// obj, so that a reconcile finding nothing to do takes no action.
//
// status is stored as given: do not change it afterwards. A nil store, a nil
// obj.Value, a revision below 1 or a condition with an empty type or an
// unknown status returns an error matching store.ErrInvalid and writes
// nothing.
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
	sameStatus, err := equalValues(cur.Status, status)
	if err != nil {
		return object{}, err
	}
	if sameStatus && cur.ObservedGeneration == cur.Generation && slices.EqualFunc(cur.Conditions, merged, Condition.equal) {
		return obj, nil
	}
	next := cur.clone()
	next.Status = status
	next.ObservedGeneration = cur.Generation
	next.Conditions = merged
	return s.Update(ctx, obj.Key, next, obj.Revision)
}

// equalValues compares specs or statuses with go-cmp, reading unexported
// fields and treating nil and empty slices and maps as equal (as a JSON
// round trip may turn one into the other). A value go-cmp cannot compare is
// reported as an error matching store.ErrInvalid rather than a panic.
func equalValues[V any](a, b V) (equal bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: cannot compare values of type %s: %v", store.ErrInvalid, reflect.TypeFor[V](), p)
		}
	}()
	return cmp.Equal(a, b, cmpopts.EquateEmpty(), cmp.Exporter(func(reflect.Type) bool { return true })), nil
}
