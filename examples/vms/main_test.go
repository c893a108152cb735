package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// TestTheDemoAdoptsTheVMOfALostAnswerAndLeavesNoneBehind: the demo runs
// to its end: the VM of the POST whose answer was lost is adopted (three
// POSTs for three VMs), the VM deleted by hand is put back, db-1's VM is
// deleted with it, and the orphan is pruned.
func TestTheDemoAdoptsTheVMOfALostAnswerAndLeavesNoneBehind(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), &out), out.String())
	require.Contains(t, out.String(), "3 POSTs, 3 VMs")
	require.Contains(t, out.String(), "pruned")
	t.Log(out.String())
}

// TestASizeTheAPICannotMakeIsRefusedWhereItIsWritten: the operator's
// store admits VMs by the kind's rule, so a size the API cannot make is
// refused naming spec.size and nothing is stored.
func TestASizeTheAPICannotMakeIsRefusedWhereItIsWritten(t *testing.T) {
	op, err := wire(t.Context())
	require.NoError(t, err)
	for _, size := range []int{0, -1, 9} {
		_, err := resource.PutSpec(t.Context(), op.s, "vms/web", VMSpec{Size: size})
		require.ErrorIs(t, err, apistore.ErrRejected, "size %d", size)
		require.ErrorIs(t, err, store.ErrInvalid)
		require.ErrorContains(t, err, "spec.size")
		_, err = op.s.Get(t.Context(), "vms/web")
		require.ErrorIs(t, err, store.ErrNotFound, "a refused spec was stored")
	}
	_, err = resource.PutSpec(t.Context(), op.s, "vms/web", VMSpec{Size: 8})
	require.NoError(t, err, "the largest size the API makes")
}
