package boltstore_test

import (
	"path/filepath"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/stretchr/testify/require"
)

// The store names its codec, so that reconcile's helpers judge a status
// write by the bytes the file would keep.
func TestStoreReportsTheCodecItEncodesWith(t *testing.T) {
	s, err := boltstore.Open[map[string]any](filepath.Join(t.TempDir(), "db"))
	require.NoError(t, err)
	defer s.Close()
	var enc store.Encoded[map[string]any] = s
	require.Equal(t, store.JSON[map[string]any]{}, enc.Codec())
}
