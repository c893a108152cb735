package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// modifyIncrements has Goroutines goroutines each add 1 to one counter
// Increments times through store.Modify; no increment may be lost.
func (s suite) modifyIncrements(t *testing.T, st store.Store[*Value]) {
	ctx := t.Context()
	mustCreate(t, st, "counter", &Value{})
	g, m := s.opts.Goroutines, s.opts.Increments
	var wg sync.WaitGroup
	errs := make(chan error, g*m)
	for range g {
		wg.Go(func() {
			for range m {
				_, err := store.Modify(ctx, st, "counter", func(cur *Value) (*Value, error) {
					return &Value{N: cur.N + 1, S: cur.S}, nil
				}, store.ModifyOptions{Attempts: 1000, Backoff: 100 * time.Microsecond, MaxBackoff: 10 * time.Millisecond})
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Modify: %v", err)
	}
	got, err := st.Get(ctx, "counter")
	require.NoError(t, err)
	require.Equal(t, g*m, got.Value.N, "every increment is kept")
}

func (suite) modifyHelpers(t *testing.T, s store.Store[*Value]) {
	ctx := t.Context()
	add := func(cur *Value) (*Value, error) { return &Value{N: cur.N + 1}, nil }

	_, err := store.Modify(ctx, s, "missing", add)
	requireIs(t, err, store.ErrNotFound, "Modify of a missing key")

	upsert := func(cur *Value, exists bool) (*Value, error) {
		if !exists {
			return &Value{N: 100, S: "new"}, nil
		}
		return &Value{N: cur.N + 1, S: cur.S}, nil
	}
	obj, err := store.CreateOrUpdate(ctx, s, "k", upsert)
	require.NoError(t, err)
	require.Equal(t, &Value{N: 100, S: "new"}, obj.Value)
	require.Equal(t, obj.Revision, obj.CreateRevision)
	obj, err = store.CreateOrUpdate(ctx, s, "k", upsert)
	require.NoError(t, err)
	require.Equal(t, &Value{N: 101, S: "new"}, obj.Value)

	obj, err = store.Modify(ctx, s, "k", add)
	require.NoError(t, err)
	require.Equal(t, 102, obj.Value.N)

	before := mustRevision(t, s)
	refuse := errors.New("refused")
	_, err = store.Modify(ctx, s, "k", func(*Value) (*Value, error) { return nil, fmt.Errorf("mutate: %w", refuse) })
	requireIs(t, err, refuse, "Modify returns the mutate function's error")
	_, err = store.Modify(ctx, s, "k", func(*Value) (*Value, error) { return nil, nil })
	requireIs(t, err, store.ErrInvalid, "Modify to a nil value")
	require.Equal(t, before, mustRevision(t, s), "a refused Modify writes nothing")

	_, err = store.Modify(ctx, s, "k", add, store.ModifyOptions{Guards: []store.Guard{{Key: "lease", Revision: 7}}})
	requireIs(t, err, store.ErrGuardFailed, "Modify with a failing guard")
	require.Equal(t, before, mustRevision(t, s))
}
