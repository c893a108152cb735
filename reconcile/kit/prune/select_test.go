package prune_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/prune"
	"github.com/converge-go/converge/store"
)

// TestCheckAllowsAPassOnlyWhenSyncedUndegradedOfOneIdentityAndNotEmptyUnlessAllowed
// walks every combination of the gate's facts: Check returns nil exactly
// when Ready is nil, both identities are read and equal, and the desired
// set is not empty or AllowEmpty is set; otherwise its error matches
// ErrRefused and the first cause in the documented order.
func TestCheckAllowsAPassOnlyWhenSyncedUndegradedOfOneIdentityAndNotEmptyUnlessAllowed(t *testing.T) {
	degraded := fmt.Errorf("%w: store: unavailable", reconcile.ErrDegraded)
	readies := []error{nil, reconcile.ErrNotSynced, degraded}
	ids := []string{"", "memory:A", "memory:B"}
	n := 0
	for _, ready := range readies {
		for _, before := range ids {
			for _, after := range ids {
				for _, desired := range []int{0, 1, 7} {
					for _, allow := range []bool{false, true} {
						n++
						f := prune.Facts{Ready: ready, Before: before, After: after, Desired: desired, AllowEmpty: allow}
						err := prune.Check(f)
						var want error
						switch {
						case ready != nil:
							want = ready
						case before == "" || after == "":
							want = prune.ErrInvalid
						case before != after:
							want = prune.ErrIdentityChanged
						case desired == 0 && !allow:
							want = prune.ErrEmpty
						}
						if want == nil {
							require.NoError(t, err, "%+v", f)
							continue
						}
						require.ErrorIs(t, err, prune.ErrRefused, "%+v", f)
						require.ErrorIs(t, err, want, "%+v", f)
						if ready == nil {
							require.NotErrorIs(t, err, reconcile.ErrNotSynced, "%+v", f)
							require.NotErrorIs(t, err, reconcile.ErrDegraded, "%+v", f)
						}
					}
				}
			}
		}
	}
	require.Equal(t, 3*3*3*3*2, n)
}

// TestSelectPicksOnlyItsOwnUndesiredObjectsInView: one case per way an
// object is kept, and the one way it is pruned.
func TestSelectPicksOnlyItsOwnUndesiredObjectsInView(t *testing.T) {
	mine := prune.Mark{Owner: "op", Store: "s1"}
	desired := func(key string) bool { return key == "dbs/wanted" }
	cases := []struct {
		name string
		obj  prune.WorldObject
		want prune.Selection
	}{
		{"unmarked", prune.WorldObject{Key: "dbs/x"}, prune.Selection{Unmarked: 1}},
		{"another owner", prune.WorldObject{Key: "dbs/x", Mark: prune.Mark{Owner: "other", Store: "s1"}}, prune.Selection{OtherOwner: 1}},
		{"owner only", prune.WorldObject{Key: "dbs/x", Mark: prune.Mark{Owner: "op"}}, prune.Selection{OtherStore: 1}},
		{"store only", prune.WorldObject{Key: "dbs/x", Mark: prune.Mark{Store: "s1"}}, prune.Selection{OtherOwner: 1}},
		{"another store", prune.WorldObject{Key: "dbs/x", Mark: prune.Mark{Owner: "op", Store: "s0"}}, prune.Selection{OtherStore: 1}},
		{"outside the prefix", prune.WorldObject{Key: "other/x", Mark: mine}, prune.Selection{OutOfView: 1}},
		{"not a store key", prune.WorldObject{Key: "dbs/\xff", Mark: mine}, prune.Selection{OutOfView: 1}},
		{"desired", prune.WorldObject{Key: "dbs/wanted", Mark: mine}, prune.Selection{Kept: 1}},
		{"its own, undesired", prune.WorldObject{Key: "dbs/x", Mark: mine}, prune.Selection{Prune: []prune.WorldObject{{Key: "dbs/x", Mark: mine}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, prune.Select([]prune.WorldObject{c.obj}, mine, "dbs/", desired))
		})
	}
	// A mark of its own is needed to prune anything.
	for _, empty := range []prune.Mark{{}, {Owner: "op"}, {Store: "s1"}} {
		sel := prune.Select([]prune.WorldObject{{Key: "dbs/x", Mark: empty}}, empty, "dbs/", desired)
		require.Empty(t, sel.Prune, "mine = %+v", empty)
	}
}

// TestSelectionMatchesTheModelOverRandomWorlds draws random desired sets
// and worlds whose objects carry random marks (its own, another owner's,
// from another store, none, half a mark) and keys (in and out of the
// prefix, invalid ones, duplicates), and checks the selection against the
// model: exactly the objects marked mine, in view and undesired are
// picked, in world order; the counts add up to the world; a larger desired
// set never picks more; the world's order changes only the order picked.
func TestSelectionMatchesTheModelOverRandomWorlds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	mine := prune.Mark{Owner: "op", Store: "memory:NEW"}
	marks := []prune.Mark{mine, mine, {Owner: "op", Store: "memory:OLD"}, {Owner: "other", Store: mine.Store}, {}, {Owner: "op"}, {Store: mine.Store}}
	keys := []string{"dbs/a", "dbs/b", "dbs/c", "dbs/d", "dbs/e", "other/a", "dbs", "", "dbs/\xff"}
	for range 5000 {
		desiredSet := map[string]bool{}
		for _, k := range keys {
			desiredSet[k] = rng.IntN(2) == 0
		}
		world := make([]prune.WorldObject, rng.IntN(12))
		for i := range world {
			world[i] = prune.WorldObject{Key: keys[rng.IntN(len(keys))], Name: fmt.Sprint(i), Mark: marks[rng.IntN(len(marks))]}
		}
		desired := func(key string) bool { return desiredSet[key] }
		sel := prune.Select(world, mine, "dbs/", desired)

		var want []prune.WorldObject
		for _, obj := range world {
			inView := len(obj.Key) > len("dbs/") && obj.Key[:4] == "dbs/" && store.ValidateKey(obj.Key) == nil
			if obj.Mark == mine && inView && !desiredSet[obj.Key] {
				want = append(want, obj)
			}
		}
		require.Equal(t, want, sel.Prune, "world %v desired %v", world, desiredSet)
		require.Equal(t, len(world), sel.Unmarked+sel.OtherOwner+sel.OtherStore+sel.OutOfView+sel.Kept+len(sel.Prune))

		// More desired, never more pruned.
		more := func(key string) bool { return desiredSet[key] || rng.IntN(2) == 0 }
		for _, obj := range prune.Select(world, mine, "dbs/", more).Prune {
			require.Contains(t, sel.Prune, obj)
		}
		// The world's order does not change what is picked.
		shuffled := slices.Clone(world)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		require.ElementsMatch(t, sel.Prune, prune.Select(shuffled, mine, "dbs/", desired).Prune)
	}
}

// FuzzSelectNeverPicksAnObjectNotMarkedMine: whatever the world and the
// desired set, no object is picked unless its mark is exactly mine, its
// key in view and not desired.
func FuzzSelectNeverPicksAnObjectNotMarkedMine(f *testing.F) {
	f.Add("op", "s1", "op", "s1", "dbs/a", "dbs/b", true)
	f.Add("op", "s1", "op", "s0", "dbs/a", "dbs/a", false)
	f.Fuzz(func(t *testing.T, owner, st, markOwner, markStore, key, desiredKey string, also bool) {
		mine := prune.Mark{Owner: owner, Store: st}
		world := []prune.WorldObject{{Key: key, Mark: prune.Mark{Owner: markOwner, Store: markStore}}, {Key: desiredKey, Mark: mine}}
		if also {
			world = append(world, prune.WorldObject{Key: key, Mark: mine})
		}
		sel := prune.Select(world, mine, "dbs/", func(k string) bool { return k == desiredKey })
		for _, obj := range sel.Prune {
			if obj.Mark != mine || owner == "" || st == "" || obj.Key == desiredKey || store.ValidateKey(obj.Key) != nil || len(obj.Key) < 4 || obj.Key[:4] != "dbs/" {
				t.Fatalf("picked %+v with mine %+v, desired %q", obj, mine, desiredKey)
			}
		}
	})
}

// TestRefusalsMatchErrRefusedAndTheirCauseOnly: a refusal unwraps to
// ErrRefused and its cause, and to nothing else of the package.
func TestRefusalsMatchErrRefusedAndTheirCauseOnly(t *testing.T) {
	err := prune.Check(prune.Facts{Before: "a", After: "a"})
	require.ErrorIs(t, err, prune.ErrRefused)
	require.ErrorIs(t, err, prune.ErrEmpty)
	require.NotErrorIs(t, err, prune.ErrIdentityChanged)
	require.NotErrorIs(t, err, store.ErrInvalid)
	require.Equal(t, "prune: pass refused: "+prune.ErrEmpty.Error(), err.Error())
	require.False(t, errors.Is(prune.Check(prune.Facts{Before: "a", After: "a", Desired: 1}), prune.ErrRefused))
}
