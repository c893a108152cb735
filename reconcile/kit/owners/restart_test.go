package owners_test

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/owners"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/faultstore"
)

// afterWrites returns a Plan that fails every write after the first n.
func afterWrites(n int64) faultstore.Plan {
	var writes atomic.Int64
	return func(c faultstore.Call) faultstore.Decision {
		if c.Op&faultstore.OpWrites != 0 && writes.Add(1) > n {
			return faultstore.Decision{Fault: faultstore.Fail}
		}
		return faultstore.Decision{}
	}
}

// tree makes rs/web with three blocking pods, each with a blocking volume,
// and returns the keys in an order where each comes after its owner.
func tree(t *testing.T, w world) []string {
	keys := []string{"rs/web"}
	w.create(t, "rs/web", nil)
	for i := range 3 {
		pod, vol := fmt.Sprintf("pods/%d", i), fmt.Sprintf("vols/%d", i)
		w.create(t, pod, nil, w.ref(t, "rs/web", true))
		w.create(t, vol, nil, w.ref(t, pod, true))
		keys = append(keys, pod, vol)
	}
	return keys
}

// TestACollectorRestartedMidCascadeFinishesIt: a collector stopped after
// part of a foreground cascade (its writes failing from then on) leaves
// it half done; another collector, or the same one run again (a new term
// of leadership), finishes it, every object after those it owns.
func TestACollectorRestartedMidCascadeFinishesIt(t *testing.T) {
	for _, again := range []string{"another collector", "the same collector"} {
		t.Run(again, func(t *testing.T) {
			each(t, func(t *testing.T, w world) {
				keys := tree(t, w)
				first := w.start(t, owners.CollectorOptions{})
				w.settle(t)
				deleted := w.deletions(t)
				w.faults().SetPlan(afterWrites(4))

				w.remove(t, "rs/web", apistore.Foreground)
				w.settle(t)
				first.stop()
				left := w.keys(t)
				require.True(t, marked(t, w, "rs/web"))
				require.Greater(t, len(left), 1, "the cascade was not stopped halfway")
				changed := len(left) < len(keys)
				for _, key := range left[1:] {
					changed = changed || marked(t, w, key)
				}
				require.True(t, changed, "the cascade had not begun")

				w.faults().SetPlan(nil)
				if again == "another collector" {
					w.start(t, owners.CollectorOptions{})
				} else {
					runCollector(t, first.collector)
				}
				w.settle(t)
				require.Empty(t, w.keys(t))
				order := deleted()
				require.ElementsMatch(t, keys, order)
				for i := 1; i < len(keys); i += 2 {
					pod, vol := keys[i], keys[i+1]
					require.Less(t, slices.Index(order, vol), slices.Index(order, pod), "%s went before %s", pod, vol)
					require.Less(t, slices.Index(order, pod), slices.Index(order, "rs/web"), "rs/web went before %s", pod)
				}
			})
		})
	}
}

// TestACollectorRunAgainSeesWhatChangedWhileItWasStopped: children made
// while the collector was stopped hold a foreground deletion of their
// owner made meanwhile, when the same collector runs again: it looks at
// the store afresh, not at what it knew.
func TestACollectorRunAgainSeesWhatChangedWhileItWasStopped(t *testing.T) {
	each(t, func(t *testing.T, w world) {
		w.create(t, "rs/web", nil)
		r := w.start(t, owners.CollectorOptions{})
		w.settle(t)
		r.stop()
		var children []string
		for i := range 10 {
			key := fmt.Sprintf("zz/%d", i) // after rs/web in key order
			w.create(t, key, nil, w.ref(t, "rs/web", true))
			children = append(children, key)
		}
		deleted := w.deletions(t)
		w.remove(t, "rs/web", apistore.Foreground)

		runCollector(t, r.collector)
		w.settle(t)
		require.Empty(t, w.keys(t))
		order := deleted()
		require.Equal(t, "rs/web", order[len(order)-1], "rs/web went before its children: %v", order)
		require.ElementsMatch(t, children, order[:len(order)-1])
	})
}
