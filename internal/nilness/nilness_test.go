package nilness

import (
	"testing"

	"github.com/stretchr/testify/require"
)

type stringer interface{ String() string }

type named struct{}

func (*named) String() string { return "" }

func TestIsFindsUntypedAndTypedNils(t *testing.T) {
	var p *named
	var s stringer = p
	var f func()
	var m map[string]int
	var sl []int
	var ch chan int
	for _, v := range []any{nil, p, s, f, m, sl, ch} {
		require.True(t, Is(v), "%T", v)
	}
	for _, v := range []any{&named{}, 0, "", struct{}{}, func() {}, map[string]int{}, []int{}, make(chan int)} {
		require.False(t, Is(v), "%T", v)
	}
}
