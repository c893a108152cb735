package codecopt_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/internal/codecopt"
)

// TestResolveDefaultsToJSONAndRefusesNilOrForeignCodecs: no codec set is
// JSON; a codec of the right type is returned; nil (untyped or a typed nil)
// and a codec of another type are ErrInvalid.
func TestResolveDefaultsToJSONAndRefusesNilOrForeignCodecs(t *testing.T) {
	c, err := codecopt.Resolve[int](false, nil)
	require.NoError(t, err)
	require.Equal(t, store.Codec[int](store.JSON[int]{}), c)

	c, err = codecopt.Resolve[int](true, store.Codec[int](store.JSON[int]{}))
	require.NoError(t, err)
	require.NotNil(t, c)

	var typedNil *store.JSON[int]
	for name, v := range map[string]any{"nil": nil, "typed nil": typedNil, "other type": store.JSON[string]{}} {
		_, err := codecopt.Resolve[int](true, v)
		require.ErrorIs(t, err, store.ErrInvalid, name)
	}
}
