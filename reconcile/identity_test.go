package reconcile

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
	"github.com/stretchr/testify/require"
)

// switchable stands for the store it points at, that one's identity
// included, as a store server restored from a snapshot, or replaced, does
// for its clients: switchTo points it at another, and ends the watches of
// the old one or leaves them open (delivering nothing more of the store
// now served).
type switchable struct {
	mu  sync.Mutex
	cur *faultstore.Store[*item]
}

func (s *switchable) now() *faultstore.Store[*item] {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

func (s *switchable) switchTo(next *faultstore.Store[*item], breakWatches bool) {
	s.mu.Lock()
	old := s.cur
	s.cur = next
	s.mu.Unlock()
	if breakWatches {
		old.BreakWatches()
	}
}

func (s *switchable) Get(ctx context.Context, key string) (store.Object[*item], error) {
	return s.now().Get(ctx, key)
}

func (s *switchable) List(ctx context.Context, prefix string) ([]store.Object[*item], int64, error) {
	return s.now().List(ctx, prefix)
}

func (s *switchable) Create(ctx context.Context, key string, v *item, g ...store.Guard) (store.Object[*item], error) {
	return s.now().Create(ctx, key, v, g...)
}

func (s *switchable) Update(ctx context.Context, key string, v *item, rev int64, g ...store.Guard) (store.Object[*item], error) {
	return s.now().Update(ctx, key, v, rev, g...)
}

func (s *switchable) Delete(ctx context.Context, key string, rev int64, g ...store.Guard) (int64, error) {
	return s.now().Delete(ctx, key, rev, g...)
}

func (s *switchable) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[*item], error) {
	return s.now().Watch(ctx, prefix, after)
}

func (s *switchable) Revision(ctx context.Context) (int64, error) { return s.now().Revision(ctx) }

func (s *switchable) Identity(ctx context.Context) (string, error) { return s.now().Identity(ctx) }

// A store that comes back with another identity (a restore: a new store
// with other content, its revisions below the old one's) is re-listed,
// never resumed from a revision of the old store, whether its old watch
// ended or stayed open: every key of the new store is reconciled with its
// new object (one at the revision the old store had it at included: a
// revision of another store says nothing), the keys it lacks are
// reconciled as deleted, and a WaitForRevision of the old store's last
// revision returns only once all that is done. The cache then follows the
// new store's revisions, lower as they are.
func TestAStoreOfAnotherIdentityIsReListedAndWaitForRevisionWaitsForIt(t *testing.T) {
	for _, breakWatches := range []bool{true, false} {
		name := map[bool]string{true: "watch ended", false: "watch left open"}[breakWatches]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				old := store.NewMemory[*item]()
				put(t, old, "x", &item{Want: 1})
				put(t, old, "y", &item{Want: 2})
				put(t, old, "z", &item{Want: 3})
				var oldRev int64
				for i := range 20 {
					oldRev = put(t, old, "y", &item{Want: 100 + i})
				}
				restored := store.NewMemory[*item]()
				put(t, restored, "x", &item{Want: 1}) // at revision 1, as in the old store
				put(t, restored, "y", &item{Want: 20})
				put(t, restored, "w", &item{Want: 4})
				sw := &switchable{cur: faulty(t, old)}
				rec := &recorder{}
				c := newTxnController(t, sw, rec, Options[*item]{HeartbeatInterval: time.Second})
				defer start(t, c)()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				require.NoError(t, c.WaitForRevision(ctx, oldRev))
				rec.reset()

				sw.switchTo(faulty(t, restored), breakWatches)
				require.NoError(t, c.WaitForRevision(ctx, oldRev))
				for key, want := range map[string]int{"x": 1, "y": 20, "w": 4} {
					req, ok := rec.last(key)
					require.True(t, ok, "%s of the restored store not reconciled before WaitForRevision returned", key)
					require.False(t, req.Deleted)
					require.Equal(t, want, req.Object.Value.Want, key)
				}
				req, ok := rec.last("z")
				require.True(t, ok, "the key the restored store lacks was not reconciled")
				require.True(t, req.Deleted)
				require.Equal(t, 3, req.Object.Value.Want)

				// The new store's revisions, below the old one's, are
				// followed.
				rev := put(t, restored, "w", &item{Want: 40})
				require.Less(t, rev, oldRev)
				require.NoError(t, c.WaitForRevision(ctx, rev))
				req, _ = rec.last("w")
				require.Equal(t, 40, req.Object.Value.Want, "a change of the restored store was not followed")
				require.Equal(t, rev, c.Health().Revision)
			})
		})
	}
}
