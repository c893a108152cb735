package apistoretest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/storetest"
	"github.com/stretchr/testify/require"
)

// quiet requires that nothing was written since rev: the store is still
// at rev, obj is untouched, and the watch w, opened at rev, delivers the
// write of a sentinel key before anything else.
func quiet(t *testing.T, s *subject, w store.Watcher[json.RawMessage], rev int64, obj store.Object[json.RawMessage], what string) {
	t.Helper()
	unchanged(t, s, rev, obj, what)
	sentinel, err := s.raw.Create(t.Context(), "sentinel", doc(nil, `{}`, ""))
	require.NoError(t, err)
	ev := storetest.NextEvent(t, w)
	require.Equal(t, sentinel.Revision, ev.Object.Revision, "%s: no event but the sentinel's, got %s at %d", what, ev.Type, ev.Object.Revision)
	_, err = s.raw.Delete(t.Context(), "sentinel", sentinel.Revision)
	require.NoError(t, err)
	storetest.NextEvent(t, w)
}

// sameWrites are the layer's writes of key at rev that would store what
// it holds, by name: the value as stored, the same object in another
// order of its members, with another generation and mark (the layer's
// own), and with another status for a spec write (the stored status is
// kept) or another spec for a status write (the stored spec is kept).
func sameWrites(ctx context.Context, s *subject, key string, rev int64, guards ...store.Guard) map[string]func() (store.Object[json.RawMessage], error) {
	stored := func() json.RawMessage {
		obj, err := s.raw.Get(ctx, key)
		if err != nil {
			return nil // the write then fails, and the caller says so
		}
		return obj.Value
	}
	return map[string]func() (store.Object[json.RawMessage], error){
		"Update as stored": func() (store.Object[json.RawMessage], error) {
			return s.layer.Update(ctx, key, stored(), rev, guards...)
		},
		"Replace in another member order, generation and mark": func() (store.Object[json.RawMessage], error) {
			v := json.RawMessage(`{"status":{"ready":false}, "spec":{ "n" : 1 },"metadata":{"generation":9,"finalizers":["cleanup"]}}`)
			obj, deleted, err := s.layer.Replace(ctx, key, v, rev, guards...)
			if deleted {
				panic("apistoretest: a write that changes nothing deleted its object")
			}
			return obj, err
		},
		"UpdateStatus as stored": func() (store.Object[json.RawMessage], error) {
			return s.layer.UpdateStatus(ctx, key, stored(), rev, guards...)
		},
		"UpdateStatus with another spec": func() (store.Object[json.RawMessage], error) {
			return s.layer.UpdateStatus(ctx, key, doc(nil, `{"n":42}`, `{"ready":true}`), rev, guards...)
		},
		"Update with another status": func() (store.Object[json.RawMessage], error) {
			return s.layer.Update(ctx, key, doc(fin("cleanup"), `{"n":1}`, `{"ready":"no"}`), rev, guards...)
		},
	}
}

// writeChangingNothing: a write through the layer that would store what
// is stored (spec, status and metadata alike) writes nothing, makes no
// event and returns the object as stored, at its revision; on a marked
// object too.
func writeChangingNothing(t *testing.T, s *subject) {
	ctx := t.Context()
	first := create(t, s, "a", doc(fin("cleanup"), `{"n":1}`, `{"ready":false}`))
	obj, err := s.layer.UpdateStatus(ctx, "a", doc(nil, `{"n":1}`, `{"ready":true}`), first.Revision)
	require.NoError(t, err)
	for _, marked := range []bool{false, true} {
		if marked {
			rev, ok, err := s.layer.DeleteWith(ctx, "a", obj.Revision, apistore.Background)
			require.NoError(t, err)
			require.True(t, ok)
			obj, _ = get(t, s, "a")
			require.Equal(t, rev, obj.Revision)
		}
		rev := revision(t, s)
		w, err := s.layer.Watch(ctx, "", rev)
		require.NoError(t, err)
		t.Cleanup(w.Stop)
		for name, write := range sameWrites(ctx, s, "a", obj.Revision) {
			got, err := write()
			require.NoError(t, err, name)
			require.Equal(t, obj.Revision, got.Revision, "%s (marked %t) returns the stored revision", name, marked)
			require.Equal(t, obj.CreateRevision, got.CreateRevision, name)
			require.JSONEq(t, string(obj.Value), string(got.Value), "%s (marked %t) returns the object as stored", name, marked)
			quiet(t, s, w, rev, obj, name)
			rev = revision(t, s)
		}
	}
}

// changingNothingStillChecks: a write through the layer that would change
// nothing still fails, writing nothing, on a stale revision
// (store.ErrConflict), a missing key (store.ErrNotFound) and a failed
// guard (store.ErrGuardFailed); and a write that lands between the
// layer's read and its check makes it a conflict.
func changingNothingStillChecks(t *testing.T, s *subject) {
	ctx := t.Context()
	first := create(t, s, "a", doc(fin("cleanup"), `{"n":1}`, `{"ready":true}`))
	obj, err := s.layer.Update(ctx, "a", doc(fin("cleanup"), `{"n":1}`, ""), first.Revision)
	require.NoError(t, err)
	require.Equal(t, first.Revision, obj.Revision, "the same spec again changes nothing")
	lease := create(t, s, "lease", doc(nil, `{}`, ""))
	before := revision(t, s)
	for name, write := range sameWrites(ctx, s, "a", obj.Revision+100) {
		_, err := write()
		requireIs(t, err, name+" at a stale revision", store.ErrConflict)
	}
	for name, write := range sameWrites(ctx, s, "a", obj.Revision, store.Guard{Key: "lease", Revision: lease.Revision + 1}) {
		_, err := write()
		requireIs(t, err, name+" with a failed guard", store.ErrGuardFailed)
	}
	for name, write := range sameWrites(ctx, s, "a", obj.Revision, store.Guard{Key: "lease", Revision: lease.Revision}) {
		got, err := write()
		require.NoError(t, err, name+" with a holding guard")
		require.Equal(t, obj.Revision, got.Revision, name)
	}
	unchanged(t, s, before, obj, "writes that change nothing")

	for name, write := range sameWrites(ctx, s, "a", obj.Revision) {
		var raced store.Object[json.RawMessage]
		s.hook.afterGet("a", func() {
			cur, err := s.raw.Get(ctx, "a")
			if err == nil {
				raced, err = s.raw.Update(ctx, "a", cur.Value, cur.Revision)
			}
			if err != nil {
				panic("apistoretest: the racing write failed: " + err.Error())
			}
		})
		_, err := write()
		requireIs(t, err, name+" with a write between the layer's read and its check", store.ErrConflict)
		require.NotZero(t, raced.Revision, "%s reads the key", name)
		unchanged(t, s, raced.Revision, raced, name+" after a racing write")
		got, err := sameWrites(ctx, s, "a", raced.Revision)[name]()
		require.NoError(t, err, "%s at the revision of the racing write", name)
		require.Equal(t, raced.Revision, got.Revision, name)
	}
}
