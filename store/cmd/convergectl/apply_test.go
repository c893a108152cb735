package main

import (
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// servers serves an empty store with the API-server layer and one
// without it, by name.
func servers(t *testing.T) map[string]func(*testing.T) (*store.Memory[value], string) {
	return map[string]func(*testing.T) (*store.Memory[value], string){"with the layer": serveLayer, "without the layer": serve}
}

// TestASpecOnlyApplyKeepsTheFinalizersAndOwnersControllersSet: applying a
// file that holds only the spec, as examples/README shows, changes the
// spec and leaves the finalizer and owner a controller set, and its
// status, whether the server applies the layer or convergectl computes
// the write.
func TestASpecOnlyApplyKeepsTheFinalizersAndOwnersControllersSet(t *testing.T) {
	for name, serve := range servers(t) {
		t.Run(name, func(t *testing.T) {
			m, url := serve(t)
			_, err := m.Create(t.Context(), "backups/nightly-1", value(`{"metadata":{"generation":1,"finalizers":["ctl/cleanup"],"owners":[{"key":"backupschedules/nightly","uid":3}]},"spec":{"n":1},"status":{"ready":true}}`))
			require.NoError(t, err)
			r := ctl(t, url, `{"spec":{"n":2}}`, "apply", "backups/nightly-1")
			require.Equal(t, exitOK, r.code, r.stderr)
			_, got := stored(t, m, "backups/nightly-1")
			require.JSONEq(t, `{"n":2}`, got.spec)
			require.Equal(t, int64(2), got.meta.Generation)
			require.Equal(t, []string{"ctl/cleanup"}, got.meta.Finalizers, "the controller's finalizer survives")
			require.Len(t, got.meta.Owners, 1, "the owner survives")
			require.Equal(t, "backupschedules/nightly", got.meta.Owners[0].Key)
			require.Equal(t, map[string]string{"status": `{"ready":true}`}, got.status)
		})
	}
}

// TestAReAppliedObjectBeingDeletedStaysMarkedWithItsFinalizers: an object
// marked for deletion, re-applied while its controller is down, keeps its
// mark and its finalizers, so its cleanup still runs; a patch that would
// remove its last finalizer is refused and writes nothing.
func TestAReAppliedObjectBeingDeletedStaysMarkedWithItsFinalizers(t *testing.T) {
	for name, serve := range servers(t) {
		t.Run(name, func(t *testing.T) {
			m, url := serve(t)
			marked := `{"metadata":{"generation":1,"finalizers":["ctl/drop"],"deletion":{"revision":1,"time":"2026-01-02T03:04:05Z"}},"spec":{"owner":"app"}}`
			_, err := m.Create(t.Context(), "databases/app", value(marked))
			require.NoError(t, err)
			r := ctl(t, url, `{"spec":{"owner":"app","reclaim":"delete"}}`, "apply", "databases/app")
			require.Equal(t, exitOK, r.code, r.stderr)
			before, got := stored(t, m, "databases/app")
			require.Equal(t, []string{"ctl/drop"}, got.meta.Finalizers, "the finalizer survives")
			require.NotNil(t, got.meta.Deletion, "the object stays marked")

			r = ctl(t, url, `{"metadata":{"finalizers":null}}`, "apply", "-patch", "databases/app")
			require.Equal(t, exitError, r.code, "a patch removing the last finalizer of a marked object")
			require.Contains(t, r.stderr, "being deleted")
			after, _ := stored(t, m, "databases/app")
			require.Equal(t, before, after, "a refused patch writes nothing")
		})
	}
}
