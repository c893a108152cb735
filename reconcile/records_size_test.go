package reconcile

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestPerKeyRecordsFitAMapSlotUnboxed: a Go map keeps a value larger than
// 128 bytes behind a pointer of its own, one allocation per key inserted;
// the controller's per-key records stay within that size.
func TestPerKeyRecordsFitAMapSlotUnboxed(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(lastReconcile{}), uintptr(128))
	require.LessOrEqual(t, unsafe.Sizeof(pendingChange{}), uintptr(128))
}
