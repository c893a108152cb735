package queue

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestItemRecordStaysWithinOneCacheLine pins the size of a key's record
// for string keys: the heap per queued key counts it, and a field added
// carelessly would grow it by a quarter.
func TestItemRecordStaysWithinOneCacheLine(t *testing.T) {
	require.Equal(t, uintptr(64), unsafe.Sizeof(item[string]{}))
}
