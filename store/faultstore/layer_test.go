package faultstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/faultstore"
)

// layered returns a faultstore over the API-server layer over memory, and
// the layer.
func layered(t *testing.T) (*faultstore.Store[json.RawMessage], *apistore.Store[json.RawMessage]) {
	t.Helper()
	layer, err := apistore.New[json.RawMessage](store.NewMemory[json.RawMessage](), apistore.JSONKind{})
	require.NoError(t, err)
	return newStore[json.RawMessage](t, layer, faultstore.Options{}), layer
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// Over the layer, a status write through the faultstore writes the status
// alone, as it would without the faultstore: the spec stays as stored.
// (Before, the faultstore offered no status writes, a controller's writer
// fell back to Update, and the layer kept the stored status: the write
// succeeded and recorded nothing.)
func TestTheLayersWritesPassThroughTheFaultsAsTheyAre(t *testing.T) {
	ctx := context.Background()
	s, layer := layered(t)
	obj, err := s.Create(ctx, "a", raw(`{"metadata":{"finalizers":["x/y"]},"spec":{"n":1}}`))
	require.NoError(t, err)

	obj, err = s.UpdateStatus(ctx, "a", raw(`{"spec":{"n":9},"phase":"ready"}`), obj.Revision)
	require.NoError(t, err)
	got, err := layer.Get(ctx, "a")
	require.NoError(t, err)
	require.JSONEq(t, `{"metadata":{"generation":1,"finalizers":["x/y"]},"spec":{"n":1},"phase":"ready"}`, string(got.Value))
	require.Equal(t, int64(2), s.Writes())

	// The same status again changes nothing: not stored, not counted.
	again, err := s.UpdateStatus(ctx, "a", got.Value, obj.Revision)
	require.NoError(t, err)
	require.Equal(t, obj.Revision, again.Revision)
	require.Equal(t, int64(2), s.Writes())

	// An apply keeps the finalizer it does not name.
	obj, err = s.Apply(ctx, "a", raw(`{"spec":{"n":2}}`))
	require.NoError(t, err)
	require.Contains(t, string(obj.Value), `"x/y"`)

	// A delete with a propagation marks it; removing the last finalizer
	// through Replace deletes it and says so.
	rev, marked, err := s.DeleteWith(ctx, "a", obj.Revision, apistore.Foreground)
	require.NoError(t, err)
	require.True(t, marked)
	got, err = layer.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, rev, got.Revision)
	_, deleted, err := s.Replace(ctx, "a", raw(`{"spec":{"n":2}}`), rev)
	require.NoError(t, err)
	require.True(t, deleted)
	_, err = layer.Get(ctx, "a")
	require.ErrorIs(t, err, store.ErrNotFound)
}

// Without the layer below, the layer's writes that need it are refused as
// unsupported before anything is sent, and the others fall back to the
// plain writes.
func TestWithoutTheLayerItsWritesAreUnsupportedAndWriteNothing(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory[json.RawMessage]()
	s := newStore[json.RawMessage](t, mem, faultstore.Options{})
	obj, err := s.Create(ctx, "a", raw(`{"spec":{"n":1}}`))
	require.NoError(t, err)

	_, err = s.UpdateStatus(ctx, "a", raw(`{"spec":{"n":2}}`), obj.Revision)
	require.ErrorIs(t, err, errors.ErrUnsupported)
	require.ErrorIs(t, err, store.ErrInvalid)
	_, err = s.Apply(ctx, "a", raw(`{"spec":{"n":2}}`))
	require.ErrorIs(t, err, errors.ErrUnsupported)
	_, _, err = s.DeleteWith(ctx, "a", obj.Revision, apistore.Orphan)
	require.ErrorIs(t, err, errors.ErrUnsupported)
	got, err := mem.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, obj.Revision, got.Revision, "a refused write reached the store")

	obj, deleted, err := s.Replace(ctx, "a", raw(`{"spec":{"n":3}}`), obj.Revision)
	require.NoError(t, err)
	require.False(t, deleted)
	_, marked, err := s.DeleteWith(ctx, "a", obj.Revision, apistore.Background)
	require.NoError(t, err)
	require.False(t, marked)
	_, err = mem.Get(ctx, "a")
	require.ErrorIs(t, err, store.ErrNotFound)
}

// The layer's writes meet the faults as every write does: an outage fails
// them before they reach the store.
func TestTheLayersWritesMeetTheFaults(t *testing.T) {
	ctx := context.Background()
	s, layer := layered(t)
	obj, err := s.Create(ctx, "a", raw(`{"spec":{"n":1}}`))
	require.NoError(t, err)
	s.SetOutage(faultstore.Loud)
	_, err = s.UpdateStatus(ctx, "a", raw(`{"phase":"x"}`), obj.Revision)
	require.ErrorIs(t, err, faultstore.ErrNotSent)
	_, err = s.Apply(ctx, "a", raw(`{"spec":{"n":2}}`))
	require.ErrorIs(t, err, faultstore.ErrNotSent)
	_, _, err = s.Replace(ctx, "a", raw(`{"spec":{"n":2}}`), obj.Revision)
	require.ErrorIs(t, err, faultstore.ErrNotSent)
	_, _, err = s.DeleteWith(ctx, "a", obj.Revision, apistore.Orphan)
	require.ErrorIs(t, err, faultstore.ErrNotSent)
	got, err := layer.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, obj.Revision, got.Revision)
}
