package storetest

import (
	"context"
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// badKeys are keys every Store must refuse, by the reason it must give.
var badKeys = map[string]string{
	"empty":        "",
	"too long":     strings.Repeat("k", store.MaxKeyLen+1),
	"invalid UTF8": "bad\xffkey",
	"NUL byte":     "nul\x00key",
}

// invalidInput calls every method with every kind of bad input and checks
// that each fails with ErrInvalid and writes nothing.
func (suite) invalidInput(t *testing.T, s store.Store[*Value]) {
	ctx := t.Context()
	a := mustCreate(t, s, "a", val(1))
	before := mustRevision(t, s)
	maxKey := strings.Repeat("k", store.MaxKeyLen)

	type call struct {
		name string
		do   func() error
	}
	var calls []call
	for reason, key := range badKeys {
		calls = append(calls,
			call{"Get " + reason, func() error { _, err := s.Get(ctx, key); return err }},
			call{"Create " + reason, func() error { _, err := s.Create(ctx, key, val(1)); return err }},
			call{"Update " + reason, func() error { _, err := s.Update(ctx, key, val(1), a.Revision); return err }},
			call{"Delete " + reason, func() error { _, err := s.Delete(ctx, key, a.Revision); return err }},
			call{"guard " + reason, func() error { _, err := s.Create(ctx, "b", val(1), store.Guard{Key: key}); return err }},
		)
		if key != "" {
			calls = append(calls,
				call{"List " + reason, func() error { _, _, err := s.List(ctx, key); return err }},
				call{"Watch " + reason, func() error { return watchErr(s.Watch(ctx, key, before)) }},
			)
		}
	}
	calls = append(calls,
		call{"Create nil value", func() error { _, err := s.Create(ctx, "b", nil); return err }},
		call{"Update nil value", func() error { _, err := s.Update(ctx, "a", nil, a.Revision); return err }},
		call{"Update negative revision", func() error { _, err := s.Update(ctx, "a", val(2), -1); return err }},
		call{"Delete negative revision", func() error { _, err := s.Delete(ctx, "a", -1); return err }},
		call{"Watch negative revision", func() error { return watchErr(s.Watch(ctx, "", -1)) }},
		call{"guard negative revision", func() error {
			_, err := s.Create(ctx, "b", val(1), store.Guard{Key: "a", Revision: -1})
			return err
		}},
		call{"second guard invalid", func() error {
			_, err := s.Create(ctx, "b", val(1), store.Guard{Key: "a", Revision: a.Revision}, store.Guard{Key: ""})
			return err
		}},
		call{"Create key over max", func() error { _, err := s.Create(ctx, maxKey+"x", val(1)); return err }},
	)
	for _, c := range calls {
		err := c.do()
		requireIs(t, err, store.ErrInvalid, c.name)
		require.NotEqual(t, store.ErrInvalid.Error(), err.Error(), "%s: the error should name the problem", c.name)
	}

	require.Equal(t, before, mustRevision(t, s), "invalid input writes nothing")
	objs, _, err := s.List(ctx, "")
	require.NoError(t, err)
	require.Equal(t, []store.Object[*Value]{a}, objs, "invalid input writes nothing")

	// The longest valid key works.
	long := mustCreate(t, s, maxKey, val(2))
	got, err := s.Get(ctx, maxKey)
	require.NoError(t, err)
	require.Equal(t, long, got)
}

// watchErr returns the error of a Watch call, stopping the watcher if the
// call succeeded (which makes the caller's check fail).
func watchErr(w store.Watcher[*Value], err error) error {
	if w != nil {
		w.Stop()
	}
	return err
}

// contextCancelled calls every method with a cancelled context: each returns
// an error matching context.Canceled (a Watch may instead start and end at
// once with it) and nothing is written.
func (suite) contextCancelled(t *testing.T, s store.Store[*Value]) {
	a := mustCreate(t, s, "a", val(1))
	before := mustRevision(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()

	checks := map[string]error{}
	_, checks["Get"] = s.Get(ctx, "a")
	_, _, checks["List"] = s.List(ctx, "")
	_, checks["Create"] = s.Create(ctx, "b", val(1))
	_, checks["Update"] = s.Update(ctx, "a", val(2), a.Revision)
	_, checks["Delete"] = s.Delete(ctx, "a", a.Revision)
	_, checks["Revision"] = s.Revision(ctx)
	for name, err := range checks {
		requireIs(t, err, context.Canceled, name+" with a cancelled context")
	}
	w, err := s.Watch(ctx, "", before)
	if err == nil {
		defer w.Stop()
		err = ended(t, w)
	}
	requireIs(t, err, context.Canceled, "Watch with a cancelled context")

	require.Equal(t, before, mustRevision(t, s), "a cancelled context writes nothing")
	got, err := s.Get(t.Context(), "a")
	require.NoError(t, err)
	require.Equal(t, a, got)
	_, err = s.Get(t.Context(), "b")
	requireIs(t, err, store.ErrNotFound, "the cancelled create wrote nothing")
}

// nilContext calls every method with a nil context: each returns an error
// matching ErrInvalid, none panics, and nothing is written.
func (suite) nilContext(t *testing.T, s store.Store[*Value]) {
	a := mustCreate(t, s, "a", val(1))
	before := mustRevision(t, s)
	var ctx context.Context // nil: the bad input under test
	calls := map[string]func() error{
		"Get":      func() error { _, err := s.Get(ctx, "a"); return err },
		"List":     func() error { _, _, err := s.List(ctx, ""); return err },
		"Create":   func() error { _, err := s.Create(ctx, "b", val(1)); return err },
		"Update":   func() error { _, err := s.Update(ctx, "a", val(2), a.Revision); return err },
		"Delete":   func() error { _, err := s.Delete(ctx, "a", a.Revision); return err },
		"Revision": func() error { _, err := s.Revision(ctx); return err },
		"Watch":    func() error { return watchErr(s.Watch(ctx, "", before)) },
	}
	if c, ok := s.(Compactor); ok {
		calls["Compact"] = func() error { return c.Compact(ctx, before) }
	}
	for name, call := range calls {
		requireIs(t, noPanic(t, name+"(nil, ...)", call), store.ErrInvalid, name+" with a nil context")
	}
	require.Equal(t, before, mustRevision(t, s), "a nil context writes nothing")
	got, err := s.Get(t.Context(), "a")
	require.NoError(t, err)
	require.Equal(t, a, got)
}
