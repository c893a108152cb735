package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
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
