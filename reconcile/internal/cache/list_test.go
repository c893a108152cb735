package cache

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// TestAListOutOfOrderFillsAnEmptyCacheAsASortedOneWould: an empty cache
// spares the lookup of each listed key while the keys strictly increase,
// as the Store contract has them; a list that breaks the contract (keys out
// of order, a key twice, as a foreign server may send) must still leave the
// cache, its index and the changes reported as looking every key up would:
// the later of two objects of a key wins, and its change says it had the
// earlier one.
func TestAListOutOfOrderFillsAnEmptyCacheAsASortedOneWould(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var objs []store.Object[*item]
		for i := range 1 + rng.IntN(40) {
			key := fmt.Sprintf("k%02d", rng.IntN(30))
			if rng.IntN(3) > 0 && len(objs) > 0 {
				// mostly sorted, as a list nearly in order would be
				key = fmt.Sprintf("k%02d", 30+i)
			}
			objs = append(objs, store.Object[*item]{Key: key, Value: &item{Want: i, Owner: fmt.Sprint(i % 3)}, Revision: int64(1 + rng.IntN(5))})
		}
		if seed%4 == 0 {
			slices.SortStableFunc(objs, func(a, b store.Object[*item]) int { return strings.Compare(a.Key, b.Key) })
		}

		// The model: every key looked up in order.
		model := map[string]store.Object[*item]{}
		var want []Change[*item]
		for _, obj := range objs {
			old, had := model[obj.Key]
			if had && old.Revision == obj.Revision {
				continue
			}
			model[obj.Key] = obj
			want = append(want, Change[*item]{Old: old, HadOld: had, Cur: obj, HasCur: true, Initial: true})
		}

		in := New[*item](nil, Options[*item]{})
		byOwner := newIndex(func(obj store.Object[*item]) []string { return []string{obj.Value.Owner} })
		in.indexes["owner"] = byOwner
		got, _ := in.install(objs, 10, "", false, "")

		require.Equal(t, want, got, "seed %d: changes reported", seed)
		cached := map[string]store.Object[*item]{}
		for key, e := range in.objects {
			cached[key] = e.object(key)
		}
		require.Equal(t, model, cached, "seed %d: cache", seed)
		wantIndex := map[string]map[string]struct{}{}
		for key, obj := range model {
			if wantIndex[obj.Value.Owner] == nil {
				wantIndex[obj.Value.Owner] = map[string]struct{}{}
			}
			wantIndex[obj.Value.Owner][key] = struct{}{}
		}
		gotIndex := map[string]map[string]struct{}{}
		for v, set := range byOwner.keys {
			gotIndex[v] = set.keys
		}
		require.Equal(t, wantIndex, gotIndex, "seed %d: index", seed)
	}
}
