package apistore_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/stretchr/testify/require"
)

func newLayer(t *testing.T) (*apistore.Store[json.RawMessage], *store.Memory[json.RawMessage]) {
	t.Helper()
	mem := store.NewMemory[json.RawMessage]()
	t.Cleanup(func() { mem.Close() })
	s, err := apistore.New[json.RawMessage](mem, apistore.JSONKind{})
	require.NoError(t, err)
	return s, mem
}

// New refuses a nil store or kind, a nil pointer given as either included.
func TestNewRefusesANilStoreOrKind(t *testing.T) {
	mem := store.NewMemory[json.RawMessage]()
	defer mem.Close()
	for name, fn := range map[string]func() error{
		"nil store": func() error { _, err := apistore.New[json.RawMessage](nil, apistore.JSONKind{}); return err },
		"nil *Memory": func() error {
			_, err := apistore.New((*store.Memory[json.RawMessage])(nil), apistore.JSONKind{})
			return err
		},
		"nil kind":  func() error { _, err := apistore.New[json.RawMessage](mem, nil); return err },
		"nil *Kind": func() error { _, err := apistore.New[json.RawMessage](mem, (*failingKind)(nil)); return err },
	} {
		require.ErrorIs(t, fn(), store.ErrInvalid, name)
	}
}

// calls calls every method of s with ctx and otherwise valid arguments.
func calls(ctx context.Context, s *apistore.Store[json.RawMessage]) map[string]func() error {
	v := json.RawMessage(`{"spec":1}`)
	return map[string]func() error{
		"Get":          func() error { _, err := s.Get(ctx, "a"); return err },
		"List":         func() error { _, _, err := s.List(ctx, ""); return err },
		"Watch":        func() error { _, err := s.Watch(ctx, "", 0); return err },
		"Revision":     func() error { _, err := s.Revision(ctx); return err },
		"Identity":     func() error { _, err := s.Identity(ctx); return err },
		"Create":       func() error { _, err := s.Create(ctx, "a", v); return err },
		"Update":       func() error { _, err := s.Update(ctx, "a", v, 1); return err },
		"Replace":      func() error { _, _, err := s.Replace(ctx, "a", v, 1); return err },
		"UpdateStatus": func() error { _, err := s.UpdateStatus(ctx, "a", v, 1); return err },
		"Delete":       func() error { _, err := s.Delete(ctx, "a", 1); return err },
		"DeleteWith":   func() error { _, _, err := s.DeleteWith(ctx, "a", 1, apistore.Foreground); return err },
	}
}

// A nil context, a zero Store and a nil *Store fail every method with
// store.ErrInvalid, never a panic; so do a bad key, a negative revision and
// a bad guard, before anything is read.
func TestNilAndZeroInputsAreInvalidNeverAPanic(t *testing.T) {
	s, _ := newLayer(t)
	var nilCtx context.Context
	for what, c := range map[string]map[string]func() error{
		"nil context": calls(nilCtx, s),
		"zero Store":  calls(t.Context(), new(apistore.Store[json.RawMessage])),
		"nil *Store":  calls(t.Context(), (*apistore.Store[json.RawMessage])(nil)),
	} {
		for name, call := range c {
			var err error
			require.NotPanics(t, func() { err = call() }, "%s: %s", what, name)
			require.ErrorIs(t, err, store.ErrInvalid, "%s: %s", what, name)
		}
	}
	require.Nil(t, (*apistore.Store[int])(nil).Kind())
	require.Equal(t, apistore.Kind[json.RawMessage](apistore.JSONKind{}), s.Kind())

	ctx, v := t.Context(), json.RawMessage(`{}`)
	_, err := s.Update(ctx, "", v, 1)
	require.ErrorIs(t, err, store.ErrInvalid, "an empty key")
	_, err = s.UpdateStatus(ctx, "a", v, -1)
	require.ErrorIs(t, err, store.ErrInvalid, "a negative revision")
	_, _, err = s.DeleteWith(ctx, "a", 1, apistore.Background, store.Guard{})
	require.ErrorIs(t, err, store.ErrInvalid, "a guard without a key")
}

// Identity is the wrapped store's; a wrapped store without one makes it
// fail with store.ErrInvalid.
func TestIdentityIsTheWrappedStoresOrInvalid(t *testing.T) {
	s, mem := newLayer(t)
	want, err := mem.Identity(t.Context())
	require.NoError(t, err)
	got, err := s.Identity(t.Context())
	require.NoError(t, err)
	require.Equal(t, want, got)

	bare, err := apistore.New[json.RawMessage](plain{mem}, apistore.JSONKind{})
	require.NoError(t, err)
	_, err = bare.Identity(t.Context())
	require.ErrorIs(t, err, store.ErrInvalid)
}

// plain hides every method of a store but those of store.Store.
type plain struct{ store.Store[json.RawMessage] }

// The mark's time is the marking process's clock, in UTC: exactly the
// fake clock inside a synctest bubble.
func TestTheMarksTimeIsTheClockOfTheMarkingProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := newLayer(t)
		obj, err := s.Create(t.Context(), "a", json.RawMessage(`{"metadata":{"finalizers":["f"]}}`))
		require.NoError(t, err)
		_, err = s.Delete(t.Context(), "a", obj.Revision)
		require.NoError(t, err)
		got, err := s.Get(t.Context(), "a")
		require.NoError(t, err)
		m, err := apistore.JSONKind{}.Meta(got.Value)
		require.NoError(t, err)
		require.Equal(t, time.Now().UTC(), m.Deletion.Time)
		require.Equal(t, 2000, m.Deletion.Time.Year(), "the bubble's clock, not the machine's")
	})
}

// A Kind that fails makes the write fail with store.ErrInvalid and write
// nothing.
func TestAFailingKindWritesNothing(t *testing.T) {
	ctx := t.Context()
	mem := store.NewMemory[json.RawMessage]()
	defer mem.Close()
	obj, err := mem.Create(ctx, "a", json.RawMessage(`{"spec":1}`))
	require.NoError(t, err)
	for _, fail := range []string{"WithMeta", "SameSpec", "Merge"} {
		s, err := apistore.New[json.RawMessage](mem, &failingKind{fail: fail})
		require.NoError(t, err)
		_, err = s.Update(ctx, "a", json.RawMessage(`{"spec":2}`), obj.Revision)
		require.ErrorIs(t, err, store.ErrInvalid, "Update with a failing %s", fail)
		_, err = s.Create(ctx, "b/"+fail, json.RawMessage(`{"spec":2}`))
		if fail == "WithMeta" {
			require.ErrorIs(t, err, store.ErrInvalid, "Create with a failing %s", fail)
		}
	}
	rev, err := mem.Revision(ctx)
	require.NoError(t, err)
	require.Equal(t, obj.Revision+2, rev, "only the creates whose Kind did not fail wrote")
}

// failingKind is JSONKind, but the method named fail fails.
type failingKind struct {
	apistore.JSONKind
	fail string
}

func (k *failingKind) err(name string) error {
	if k.fail == name {
		return errors.New("the kind fails")
	}
	return nil
}

func (k *failingKind) WithMeta(v json.RawMessage, m apistore.Meta) (json.RawMessage, error) {
	if err := k.err("WithMeta"); err != nil {
		return nil, err
	}
	return k.JSONKind.WithMeta(v, m)
}

func (k *failingKind) SameSpec(a, b json.RawMessage) (bool, error) {
	if err := k.err("SameSpec"); err != nil {
		return false, err
	}
	return k.JSONKind.SameSpec(a, b)
}

func (k *failingKind) Merge(a, b json.RawMessage) (json.RawMessage, error) {
	if err := k.err("Merge"); err != nil {
		return nil, err
	}
	return k.JSONKind.Merge(a, b)
}
