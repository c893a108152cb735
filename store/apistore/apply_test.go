package apistore_test

import (
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/stretchr/testify/require"
)

// item is a typed value whose Kind is no PartialKind: a Go document always
// states its spec and its status.
type item struct {
	Meta   apistore.Meta
	Spec   int
	Status int
}

type itemKind struct{}

func (itemKind) Meta(v item) (apistore.Meta, error) { return v.Meta, nil }
func (itemKind) WithMeta(v item, m apistore.Meta) (item, error) {
	v.Meta = m
	return v, nil
}
func (itemKind) SameSpec(a, b item) (bool, error) { return a.Spec == b.Spec, nil }
func (itemKind) Merge(spec, status item) (item, error) {
	spec.Status = status.Status
	return spec, nil
}

// TestApplyOfATypedValueKeepsTheControllersMetadataAndStatus: with a Kind
// that cannot leave parts out, Apply writes the document's spec (its zero
// included), keeps the stored status, adds the finalizers and owners the
// document names and removes none; a created object holds the document as
// Create stores it.
func TestApplyOfATypedValueKeepsTheControllersMetadataAndStatus(t *testing.T) {
	ctx := t.Context()
	mem := store.NewMemory[item]()
	t.Cleanup(func() { _ = mem.Close() })
	s, err := apistore.New[item](mem, itemKind{})
	require.NoError(t, err)

	obj, err := s.Apply(ctx, "k", item{Meta: apistore.Meta{Generation: 5, Finalizers: []string{"user/f"}}, Spec: 1, Status: 9})
	require.NoError(t, err)
	require.Equal(t, item{Meta: apistore.Meta{Generation: 1, Finalizers: []string{"user/f"}}, Spec: 1, Status: 9}, obj.Value, "created as Create stores it")

	ctl := obj.Value
	ctl.Meta.Finalizers = []string{"user/f", "ctl/g"}
	ctl.Meta.Owners = []apistore.Owner{{Key: "o", UID: 1}}
	ctl.Status = 2
	obj, err = s.Update(ctx, "k", ctl, obj.Revision)
	require.NoError(t, err)
	obj, err = s.UpdateStatus(ctx, "k", ctl, obj.Revision)
	require.NoError(t, err)

	obj, err = s.Apply(ctx, "k", item{Spec: 0, Status: 7})
	require.NoError(t, err)
	require.Equal(t, item{Meta: apistore.Meta{Generation: 2, Finalizers: []string{"user/f", "ctl/g"}, Owners: []apistore.Owner{{Key: "o", UID: 1}}}, Spec: 0, Status: 2}, obj.Value)
}

// TestAppliedRefusesANilKindAndUnreadableStoredMetadata: the rule as a
// function checks what it is given.
func TestAppliedRefusesANilKindAndUnreadableStoredMetadata(t *testing.T) {
	_, err := apistore.Applied[[]byte](nil, nil, nil)
	require.ErrorIs(t, err, store.ErrInvalid)
	_, err = apistore.Applied(apistore.JSONKind{}, []byte(`{"spec":1}`), []byte(`[]`))
	require.ErrorIs(t, err, store.ErrInvalid)
}
