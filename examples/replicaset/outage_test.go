package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
)

func TestOutage(t *testing.T) {
	ctx := t.Context()
	mem := store.NewMemory[string]()
	o := NewOutage[string](mem)
	_, err := o.Create(ctx, "a", "1")
	require.NoError(t, err)
	w, err := o.Watch(ctx, "", 0)
	require.NoError(t, err)
	defer w.Stop()
	ev := <-w.Events()
	assert.Equal(t, "a", ev.Object.Key)

	o.SetDown(true)
	assert.True(t, o.Down())
	for ev := range w.Events() {
		t.Errorf("event from a broken watch: %+v", ev)
	}
	assert.ErrorIs(t, w.Err(), store.ErrUnavailable, "a watch open when the store went down")

	_, err = o.Get(ctx, "a")
	assert.ErrorIs(t, err, store.ErrUnavailable)
	_, _, err = o.List(ctx, "")
	assert.ErrorIs(t, err, store.ErrUnavailable)
	_, err = o.Create(ctx, "b", "2")
	assert.ErrorIs(t, err, store.ErrUnavailable)
	_, err = o.Update(ctx, "a", "2", ev.Object.Revision)
	assert.ErrorIs(t, err, store.ErrUnavailable)
	_, err = o.Delete(ctx, "a", ev.Object.Revision)
	assert.ErrorIs(t, err, store.ErrUnavailable)
	_, err = o.Revision(ctx)
	assert.ErrorIs(t, err, store.ErrUnavailable)
	_, err = o.Watch(ctx, "", 0)
	assert.ErrorIs(t, err, store.ErrUnavailable)

	// The store behind kept its data and took no write.
	obj, err := mem.Get(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, "1", obj.Value)
	rev, err := mem.Revision(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), rev)

	o.SetDown(false)
	w2, err := o.Watch(ctx, "", ev.Object.Revision)
	require.NoError(t, err)
	defer w2.Stop()
	_, err = o.Update(ctx, "a", "2", ev.Object.Revision)
	require.NoError(t, err)
	got := <-w2.Events()
	assert.Equal(t, "2", got.Object.Value)
}
