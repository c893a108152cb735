package debugpage_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
)

// The page reads Controller.Inspect: every page of every order, walked to
// the end, lists exactly the keys Controller.Snapshot lists, each as
// Snapshot describes it, once.
func TestInspectPagesListWhatSnapshotListsOnceEach(t *testing.T) {
	scene(t, "x", func(t *testing.T, w *world, _ *debugpage.Handler) {
		// More keys, waiting, and a reconciled key queued again: the
		// walk over the reconciled keys meets queued ones.
		values := map[string]string{}
		for i := range 40 {
			values[fmt.Sprintf("more/%02d", i)] = "ok"
		}
		w.put(t, values)
		obj, err := w.s.Get(context.Background(), "app/ok-1")
		require.NoError(t, err)
		_, err = w.s.Update(context.Background(), "app/ok-1", "ok", obj.Revision)
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, queue.Waiting, w.c.Inspect(reconcile.KeyQuery{Prefix: "app/ok-1"}).Keys[0].State,
			"a reconciled key is queued again")
		want := map[string]reconcile.KeyState{}
		for _, s := range w.c.Snapshot() {
			want[s.Key] = s
		}
		for sort := reconcile.ByKey; sort <= reconcile.ByPendingSince; sort++ {
			for _, desc := range []bool{false, true} {
				for _, size := range []int{1, 3, 7, 100} {
					got := map[string]reconcile.KeyState{}
					var order []string
					for offset := 0; ; offset += size {
						page := w.c.Inspect(reconcile.KeyQuery{Sort: sort, Descending: desc, Offset: offset, Limit: size})
						assert.Equal(t, len(want), page.Matched)
						for _, s := range page.Keys {
							assert.NotContains(t, got, s.Key, "listed twice")
							got[s.Key] = s
							order = append(order, s.Key)
						}
						if len(page.Keys) < size {
							break
						}
					}
					assert.Equal(t, want, got, "sort %d desc %v size %d", sort, desc, size)
					full := w.c.Inspect(reconcile.KeyQuery{Sort: sort, Descending: desc, Limit: len(want)})
					var fullOrder []string
					for _, s := range full.Keys {
						fullOrder = append(fullOrder, s.Key)
					}
					assert.Equal(t, fullOrder, order, "pages of one order neither overlap nor skip")
				}
			}
		}
		counted := 0
		for _, s := range []queue.State{0, queue.Waiting, queue.Delayed, queue.Processing} {
			page := w.c.Inspect(reconcile.KeyQuery{States: []queue.State{s}, Limit: 1000})
			counted += page.Matched
			for _, k := range page.Keys {
				assert.Equal(t, s, k.State)
			}
		}
		assert.Equal(t, len(want), counted, "the state filters partition the keys")
	})
}
