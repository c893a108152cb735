package resource

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// Kind is the apistore.Kind of Resource[Spec, Status]: its metadata is
// Meta, its spec Spec, and its status everything else (Status,
// ObservedGeneration, Conditions). Wrap a store with it to have the
// API-server layer own generation, status and deletion:
//
//	s, err := apistore.New(inner, resource.Kind[AppSpec, AppStatus]{})
//
// The zero Kind is ready to use.
type Kind[Spec, Status any] struct{}

var _ apistore.Kind[*Resource[int, int]] = Kind[int, int]{}

// Meta returns v's metadata.
func (Kind[Spec, Status]) Meta(v *Resource[Spec, Status]) (apistore.Meta, error) {
	if v == nil {
		return apistore.Meta{}, fmt.Errorf("%w: nil resource", store.ErrInvalid)
	}
	return cloneMeta(v.Meta), nil
}

// WithMeta returns a copy of v holding m.
func (Kind[Spec, Status]) WithMeta(v *Resource[Spec, Status], m apistore.Meta) (*Resource[Spec, Status], error) {
	if v == nil {
		return nil, fmt.Errorf("%w: nil resource", store.ErrInvalid)
	}
	c := v.clone()
	c.Meta = cloneMeta(m)
	return c, nil
}

// SameSpec reports whether a and b hold the same spec: equal as Go values
// (go-cmp, nil and empty alike), or encoding to the same JSON, which is
// what a codec-backed store keeps (a number in a map[string]any reads back
// as a float64).
func (Kind[Spec, Status]) SameSpec(a, b *Resource[Spec, Status]) (bool, error) {
	if a == nil || b == nil {
		return false, fmt.Errorf("%w: nil resource", store.ErrInvalid)
	}
	same, cmpErr := store.Equal(a.Spec, b.Spec)
	if same {
		return true, nil
	}
	ab, errA := json.Marshal(a.Spec)
	bb, errB := json.Marshal(b.Spec)
	if errA != nil || errB != nil {
		return false, cmpErr
	}
	return bytes.Equal(ab, bb), nil
}

// Merge returns a copy of spec with the status of status: its Status,
// ObservedGeneration and Conditions.
func (Kind[Spec, Status]) Merge(spec, status *Resource[Spec, Status]) (*Resource[Spec, Status], error) {
	if spec == nil || status == nil {
		return nil, fmt.Errorf("%w: nil resource", store.ErrInvalid)
	}
	c := spec.clone()
	c.Status = status.Status
	c.ObservedGeneration = status.ObservedGeneration
	c.Conditions = slices.Clone(status.Conditions)
	return c, nil
}
