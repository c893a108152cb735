package resource

import (
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/stretchr/testify/require"
)

func TestGenerationChangedLetsSpecChangesThroughAndDropsStatusOnes(t *testing.T) {
	type res = Resource[int, string]
	p := GenerationChanged[int, string]()
	v1 := &store.Object[*res]{Value: &res{Meta: apistore.Meta{Generation: 1}, Status: "a"}}
	v1status := &store.Object[*res]{Value: &res{Meta: apistore.Meta{Generation: 1}, Status: "b"}}
	v2 := &store.Object[*res]{Value: &res{Meta: apistore.Meta{Generation: 2}, Status: "b"}}
	require.True(t, p(nil, v1), "creation")
	require.True(t, p(v1, nil), "deletion")
	require.True(t, p(v1, v2), "spec change")
	require.False(t, p(v1, v1status), "status-only change")
}
