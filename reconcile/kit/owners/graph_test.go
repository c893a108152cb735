package owners

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store/apistore"
)

// TestTheGraphKeepsWhatEachKeyLastNamedAndWakesTheOwnersThatChanged: after
// any sequence of seen and gone, each at a random revision, the graph's
// children of every owner are exactly those a model of "the newest object
// seen per key" names; a change of references returns the owners named
// before or after it, and nothing else; an object older than the newest
// seen of its key changes nothing, even once the key is gone or names no
// one; a key is seen removed exactly when its removal is the newest of it;
// and a key that names no one holds no node.
func TestTheGraphKeepsWhatEachKeyLastNamedAndWakesTheOwnersThatChanged(t *testing.T) {
	type seenNode struct {
		rev  int64
		refs []apistore.Owner
		mark mark
	}
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			var g graph
			g.build(func() []entry { return nil })
			model := map[string]seenNode{}
			// floor is the newest revision seen of a key without a node,
			// and removed whether it was its removal.
			floor, removed := map[string]int64{}, map[string]bool{}
			keys := []string{"a", "b", "c", "d", "e"}
			for i := range 400 {
				key := keys[rng.IntN(len(keys))]
				rev := int64(max(1, i-rng.IntN(3))) // now and then older than what is held
				old, had := model[key]
				fresh := had && rev >= old.rev || !had && rev > floor[key]
				if rng.IntN(4) == 0 {
					woken := g.gone(key, rev)
					if had && fresh {
						require.ElementsMatch(t, refKeys(old.refs), woken)
					} else {
						require.Empty(t, woken)
					}
					if had && fresh || !had && rev >= floor[key] {
						delete(model, key)
						floor[key], removed[key] = rev, true
					}
				} else {
					var refs []apistore.Owner
					for range rng.IntN(3) {
						refs = append(refs, apistore.Owner{Key: keys[rng.IntN(len(keys))], UID: int64(1 + rng.IntN(2)), Block: rng.IntN(2) == 0})
					}
					mk := mark(rng.IntN(3))
					woken := g.seen(key, rev, refs, mk)
					switch {
					case !fresh:
						require.Empty(t, woken)
					default:
						want := []string{}
						if !slices.Equal(old.refs, refs) {
							want = refKeys(append(slices.Clone(old.refs), refs...))
						}
						require.ElementsMatch(t, want, woken)
						switch {
						case len(refs) > 0:
							model[key] = seenNode{rev: rev, refs: refs, mark: mk}
							delete(floor, key)
							delete(removed, key)
						case had:
							delete(model, key)
							floor[key], removed[key] = rev, false
						}
					}
				}
				for _, k := range keys {
					at, ok := floor[k]
					require.Equal(t, ok && removed[k], g.removedSince(k, at-1), "removal of %s", k)
				}
				for _, owner := range keys {
					var want []child
					for k, n := range model {
						for _, r := range n.refs {
							if r.Key == owner {
								want = append(want, child{key: k, ref: r, mark: n.mark})
							}
						}
					}
					slices.SortStableFunc(want, func(a, b child) int { return strings.Compare(a.key, b.key) })
					require.ElementsMatch(t, want, g.childrenOf(owner), "children of %s", owner)
				}
				require.Len(t, g.nodes, len(model))
			}
			g.reset()
			require.Empty(t, g.childrenOf("a"))
		})
	}
}

// refKeys returns the distinct keys refs name.
func refKeys(refs []apistore.Owner) []string {
	keys := []string{}
	for _, r := range refs {
		if !slices.Contains(keys, r.Key) {
			keys = append(keys, r.Key)
		}
	}
	return keys
}
