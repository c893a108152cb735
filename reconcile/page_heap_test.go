package reconcile

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPageHeapKeepsTheFirstInOrder offers keys in random orders, with fewer
// and more keys than the bound (Health's first stale keys), and compares
// with a full sort.
func TestPageHeapKeepsTheFirstInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, maxStaleKeys - 1, maxStaleKeys, maxStaleKeys + 1, 1000} {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("key-%05d", i)
		}
		for range 20 {
			rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
			f := pageHeap[string]{cmp: strings.Compare, max: maxStaleKeys}
			for _, k := range keys {
				f.offer(k)
			}
			want := slices.Sorted(slices.Values(keys))
			want = want[:min(len(want), maxStaleKeys)]
			if len(want) == 0 {
				want = nil
			}
			require.Equal(t, want, f.sorted(), "%d keys", n)
		}
	}
}
