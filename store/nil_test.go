package store_test

import (
	"context"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// storeCalls calls every method of s with valid arguments except ctx, and
// returns each method's error.
func storeCalls[T any](ctx context.Context, s store.Store[T], value T) map[string]func() error {
	return map[string]func() error{
		"Get": func() error { _, err := s.Get(ctx, "k"); return err },
		"List": func() error {
			_, _, err := s.List(ctx, "")
			return err
		},
		"Revision": func() error { _, err := s.Revision(ctx); return err },
		"Create":   func() error { _, err := s.Create(ctx, "k", value); return err },
		"Update":   func() error { _, err := s.Update(ctx, "k", value, 1); return err },
		"Delete":   func() error { _, err := s.Delete(ctx, "k", 1); return err },
		"Watch": func() error {
			w, err := s.Watch(ctx, "", 0)
			if err == nil {
				w.Stop()
			}
			return err
		},
		"Modify": func() error {
			_, err := store.Modify(ctx, s, "k", func(v T) (T, error) { return v, nil })
			return err
		},
		"CreateOrUpdate": func() error {
			_, err := store.CreateOrUpdate(ctx, s, "k", func(v T, _ bool) (T, error) { return value, nil })
			return err
		},
	}
}

// requireInvalid runs every call and requires an error matching
// store.ErrInvalid, never a panic.
func requireInvalid(t *testing.T, what string, calls map[string]func() error) {
	t.Helper()
	for name, call := range calls {
		t.Run(what+"/"+name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { err = call() })
			require.ErrorIs(t, err, store.ErrInvalid)
		})
	}
}

// badCodec is a codec type whose nil pointer would panic.
type badCodec struct{ prefix string }

func (c *badCodec) Marshal(v int) ([]byte, error)   { return []byte(c.prefix), nil }
func (c *badCodec) Unmarshal(b []byte) (int, error) { return len(c.prefix), nil }

// Every exported constructor, method and helper of package store, given nil
// or zero inputs, returns an error matching store.ErrInvalid: never a panic.
func TestNilAndZeroInputsAreRefusedWithErrInvalidNeverAPanic(t *testing.T) {
	ctx := context.Background()
	var nilCtx context.Context

	mem := store.NewMemory[*item]()
	defer mem.Close()
	requireInvalid(t, "Memory with a nil context", storeCalls(nilCtx, store.Store[*item](mem), &item{}))
	requireInvalid(t, "nil *Memory", storeCalls(ctx, store.Store[*item]((*store.Memory[*item])(nil)), &item{}))
	requireInvalid(t, "zero Memory", storeCalls(ctx, store.Store[*item](new(store.Memory[*item])), &item{}))
	requireInvalid(t, "Memory extras", map[string]func() error{
		"Compact with a nil context":  func() error { return mem.Compact(nilCtx, 0) },
		"Compact on a zero Memory":    func() error { return new(store.Memory[int]).Compact(ctx, 0) },
		"Close on a nil *Memory":      func() error { return (*store.Memory[int])(nil).Close() },
		"nil value":                   func() error { _, err := mem.Create(ctx, "k", nil); return err },
		"Identity with a nil context": func() error { _, err := mem.Identity(nilCtx); return err },
		"Identity on a zero Memory":   func() error { _, err := new(store.Memory[int]).Identity(ctx); return err },
		"Identity on a nil *Memory":   func() error { _, err := (*store.Memory[int])(nil).Identity(ctx); return err },
	})

	raw := store.NewMemory[[]byte]()
	defer raw.Close()
	view := store.NewView[int](raw, nil)
	requireInvalid(t, "View with a nil context", storeCalls(nilCtx, store.Store[int](view), 1))
	requireInvalid(t, "View of a nil store", storeCalls(ctx, store.Store[int](store.NewView[int](nil, nil)), 1))
	requireInvalid(t, "View of a nil *Memory", storeCalls(ctx, store.Store[int](store.NewView[int]((*store.Memory[[]byte])(nil), nil)), 1))
	requireInvalid(t, "View with a nil codec pointer", storeCalls(ctx, store.Store[int](store.NewView[int](raw, (*badCodec)(nil))), 1))
	requireInvalid(t, "zero View", storeCalls(ctx, store.Store[int](new(store.View[int])), 1))
	requireInvalid(t, "nil *View", storeCalls(ctx, store.Store[int]((*store.View[int])(nil)), 1))
	requireInvalid(t, "View extras", map[string]func() error{
		"Identity with a nil context": func() error { _, err := view.Identity(nilCtx); return err },
		"Identity of a nil store":     func() error { _, err := store.NewView[int](nil, nil).Identity(ctx); return err },
		"Identity of a zero View":     func() error { _, err := new(store.View[int]).Identity(ctx); return err },
		"Identity of a nil *View":     func() error { _, err := (*store.View[int])(nil).Identity(ctx); return err },
	})

	requireInvalid(t, "helpers", map[string]func() error{
		"Modify with a nil store": func() error {
			_, err := store.Modify[int](ctx, nil, "k", func(v int) (int, error) { return v, nil })
			return err
		},
		"Modify with a nil *Memory": func() error {
			_, err := store.Modify[int](ctx, (*store.Memory[int])(nil), "k", func(v int) (int, error) { return v, nil })
			return err
		},
		"Modify with a nil mutate": func() error {
			_, err := store.Modify[int](ctx, view, "k", nil)
			return err
		},
		"CreateOrUpdate with a nil store": func() error {
			_, err := store.CreateOrUpdate[int](ctx, nil, "k", func(v int, _ bool) (int, error) { return v, nil })
			return err
		},
		"CreateOrUpdate with a nil mutate": func() error {
			_, err := store.CreateOrUpdate[int](ctx, view, "k", nil)
			return err
		},
		"ValidateKey of an empty key": func() error { return store.ValidateKey("") },
		"ValidateValue of a nil value": func() error {
			return store.ValidateValue[*item](nil)
		},
		"ValidateRevision of a negative revision": func() error { return store.ValidateRevision(-1) },
		"ValidateGuards of a zero guard":          func() error { return store.ValidateGuards([]store.Guard{{}}) },
	})

	t.Run("nil options are ignored, a nil codec means JSON", func(t *testing.T) {
		require.NotPanics(t, func() {
			m := store.NewMemory[int](nil, store.WithHistory(0), store.WithWatchLag(0), store.WithMutationCheck(nil))
			defer m.Close()
			v := store.NewView[int](raw, nil)
			obj, err := store.CreateOrUpdate[int](ctx, v, "k", func(int, bool) (int, error) { return 7, nil })
			require.NoError(t, err)
			got, err := v.Get(ctx, "k")
			require.NoError(t, err)
			require.Equal(t, obj.Value, got.Value)
			_, err = store.Modify[int](ctx, m, "absent", func(v int) (int, error) { return v, nil }, store.ModifyOptions{})
			require.ErrorIs(t, err, store.ErrNotFound)
		})
	})
}
