package boltstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
)

// noPanic runs fn and reports a panic as a test failure with the call's name.
func noPanic(t *testing.T, name string, fn func() error) (err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("%s panicked: %v", name, p)
			err = nil
		}
	}()
	return fn()
}

// TestNilAndZeroInputsAreInvalidNotPanics calls every exported constructor
// and method with nil or zero inputs: a nil Option, a nil codec, an empty
// path, a nil context, a zero Store: each is refused with an error matching
// store.ErrInvalid, and none panics.
func TestNilAndZeroInputsAreInvalidNotPanics(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s := openAt(t, filepath.Join(t.TempDir(), "live.db"))
	obj, err := s.Create(t.Context(), "a", &item{N: 1})
	mustNot(t, err)
	w, err := s.Watch(t.Context(), "", 0)
	mustNot(t, err)
	defer w.Stop()
	pr, ok := w.(store.ProgressRequester)
	if !ok {
		t.Fatalf("watcher %T is not a store.ProgressRequester", w)
	}
	var zero boltstore.Store[*item]
	var nilCtx context.Context // nil: the bad input under test
	ctx := t.Context()

	calls := map[string]func() error{
		"Open with a nil Option": func() error { return second(boltstore.Open[*item](path, nil)) },
		"Open with a nil Option after a good one": func() error {
			return second(boltstore.Open[*item](path, boltstore.WithHistory(5), nil))
		},
		"Open with a nil codec":   func() error { return second(boltstore.Open[*item](path, boltstore.WithCodec[*item](nil))) },
		"Open with an empty path": func() error { return second(boltstore.Open[*item]("")) },

		"Get nil ctx":             func() error { return second(s.Get(nilCtx, "a")) },
		"List nil ctx":            func() error { return listErr(s.List(nilCtx, "")) },
		"Create nil ctx":          func() error { return second(s.Create(nilCtx, "b", &item{})) },
		"Update nil ctx":          func() error { return second(s.Update(nilCtx, "a", &item{}, obj.Revision)) },
		"Delete nil ctx":          func() error { return second(s.Delete(nilCtx, "a", obj.Revision)) },
		"Watch nil ctx":           func() error { return second(s.Watch(nilCtx, "", 0)) },
		"Revision nil ctx":        func() error { return second(s.Revision(nilCtx)) },
		"Compact nil ctx":         func() error { return s.Compact(nilCtx, 0) },
		"RequestProgress nil ctx": func() error { return pr.RequestProgress(nilCtx) },
		"Identity nil ctx":        func() error { return second(s.Identity(nilCtx)) },

		"zero Store Get":      func() error { return second(zero.Get(ctx, "a")) },
		"zero Store List":     func() error { return listErr(zero.List(ctx, "")) },
		"zero Store Create":   func() error { return second(zero.Create(ctx, "b", &item{})) },
		"zero Store Update":   func() error { return second(zero.Update(ctx, "a", &item{}, 1)) },
		"zero Store Delete":   func() error { return second(zero.Delete(ctx, "a", 1)) },
		"zero Store Watch":    func() error { return second(zero.Watch(ctx, "", 0)) },
		"zero Store Revision": func() error { return second(zero.Revision(ctx)) },
		"zero Store Compact":  func() error { return zero.Compact(ctx, 0) },
		"zero Store Identity": func() error { return second(zero.Identity(ctx)) },
		"nil Store Identity":  func() error { return second((*boltstore.Store[*item])(nil).Identity(ctx)) },
		"zero Store Close":    func() error { return zero.Close() },
		"nil Store Close":     func() error { return (*boltstore.Store[*item])(nil).Close() },
	}
	for name, call := range calls {
		if err := noPanic(t, name, call); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want an error matching store.ErrInvalid", name, err)
		}
	}
	assertRevision(t, s, obj.Revision)
}
