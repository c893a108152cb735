package main

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// TestASpecNoReconcileCanMakeWorkIsRefusedWhereItIsWritten: the demo's
// store admits replica sets by the controller's rule (controller.Admission):
// a negative replica count, or a command whose program name is empty, is
// refused naming the field, and nothing is stored; a spec the rule admits
// is stored.
func TestASpecNoReconcileCanMakeWorkIsRefusedWhereItIsWritten(t *testing.T) {
	dir := t.TempDir()
	st, err := openStore(t.Context(), storePlaces{path: filepath.Join(dir, "store.db"), logDir: filepath.Join(dir, "log")},
		demo.NewNarrator(io.Discard), func() {})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.close()) })
	for field, spec := range map[string]controller.Spec{
		"spec.replicas":   {Replicas: -1},
		"spec.command[0]": {Replicas: 1, Command: []string{""}},
	} {
		_, err := resource.PutSpec(t.Context(), st.api, demoKey, spec)
		require.ErrorIs(t, err, apistore.ErrRejected, "%+v", spec)
		require.ErrorIs(t, err, store.ErrInvalid)
		require.ErrorContains(t, err, field)
		_, err = st.db.Get(t.Context(), demoKey)
		require.ErrorIs(t, err, store.ErrNotFound, "a refused spec was stored")
	}
	obj, err := resource.PutSpec(t.Context(), st.api, demoKey, controller.Spec{Replicas: 2})
	require.NoError(t, err)
	require.Equal(t, 2, obj.Value.Spec.Replicas)
}
