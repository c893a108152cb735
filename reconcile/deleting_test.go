package reconcile

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
)

// marked is an object that can be marked for deletion, as apistore.Meta's
// embedders are.
type marked struct {
	Want   int
	Marked bool
}

func (m *marked) Deleting() bool { return m.Marked }

// TestAMarkedObjectIsReconciledAsDeletingWhateverThePredicates: the change
// that marks an object for deletion wakes its key even when every
// predicate would drop it, the request says Deleting (not Deleted: the
// object is still there), and Health and Inspect show the key as being
// deleted, since when, until it is gone.
func TestAMarkedObjectIsReconciledAsDeletingWhateverThePredicates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*marked]()
		var mu sync.Mutex
		var seen []Request[*marked]
		rec := ReconcilerFunc[*marked](func(_ context.Context, req Request[*marked]) (Result, error) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, req)
			return Result{}, nil
		})
		dropAll := func(old, cur *store.Object[*marked]) bool { return old == nil || cur == nil } // updates dropped
		c, err := New(s, rec, Options[*marked]{Name: "marks", Predicates: []Predicate[*marked]{dropAll}})
		require.NoError(t, err)
		obj, err := s.Create(t.Context(), "a", &marked{Want: 1})
		require.NoError(t, err)
		defer start(t, c)()
		synctest.Wait()
		last := func() Request[*marked] {
			mu.Lock()
			defer mu.Unlock()
			return seen[len(seen)-1]
		}
		require.False(t, last().Deleting)

		markedAt := time.Now()
		obj, err = s.Update(t.Context(), "a", &marked{Want: 1, Marked: true}, obj.Revision)
		require.NoError(t, err)
		require.NoError(t, c.WaitForRevision(t.Context(), obj.Revision))
		req := last()
		require.True(t, req.Deleting, "the marking change was filtered out")
		require.False(t, req.Deleted)
		require.Equal(t, obj.Revision, req.Object.Revision)
		h := c.Health()
		require.Equal(t, 1, h.Deleting)
		require.Equal(t, []string{"a"}, h.DeletingKeys)
		page := c.Inspect(KeyQuery{Prefix: "a"})
		require.Len(t, page.Keys, 1)
		require.Equal(t, markedAt, page.Keys[0].DeletingSince)

		rev, err := s.Delete(t.Context(), "a", obj.Revision)
		require.NoError(t, err)
		require.NoError(t, c.WaitForRevision(t.Context(), rev))
		require.True(t, last().Deleted)
		require.Zero(t, c.Health().Deleting, "a key gone is no longer being deleted")
	})
}
