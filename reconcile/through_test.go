package reconcile

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/store"
)

// TestWritesOfAnotherKindThroughTheControllerAreFencedAndTheirEchoesWakeNothing:
// a parent's reconcile writes its child, of another store, through
// Through: the child's echo, seen by the controller's FromStore source,
// does not wake the parent again, while a change by someone else does;
// once another replica holds the lease, the deposed leader's child write
// fails with ErrGuardFailed and changes nothing; no echo is left awaited.
func TestWritesOfAnotherKindThroughTheControllerAreFencedAndTheirEchoesWakeNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		raw := store.NewMemory[[]byte]()
		items := store.NewView[*item](raw, store.JSON[*item]{})
		kids := store.NewView[*item](raw, store.JSON[*item]{})
		leases := store.NewView[lock.Record](raw, store.JSON[lock.Record]{})
		put(t, items, "items/p", &item{Want: 1})
		lease, err := lock.NewLease(leases, "leader", lock.LeaseOptions{Holder: "a", TTL: 30 * time.Second})
		require.NoError(t, err)
		el, err := lock.NewElector(lease, lock.ElectorOptions{})
		require.NoError(t, err)

		var mu sync.Mutex
		var runs int
		var lastErr error
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			err := ensureKid(ctx, Through(req, kids), req.Object.Value.Want)
			mu.Lock()
			runs, lastErr = runs+1, err
			mu.Unlock()
			return Result{}, err
		}}
		toParent := func(old, cur *store.Object[*item]) []string { return []string{"items/p"} }
		c, err := New(items, rec, Options[*item]{Name: "parents", Prefix: "items/",
			Sources: []Source{FromStore(kids, "kids/", toParent)}})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- el.Run(ctx, c.Run) }()
		synctest.Wait()
		count := func() (int, error) { mu.Lock(); defer mu.Unlock(); return runs, lastErr }
		n, err := count()
		require.NoError(t, err)
		require.Equal(t, 1, n, "the child's echo woke its parent")
		require.Zero(t, c.echoes.size())

		kid, err := kids.Get(ctx, "kids/p")
		require.NoError(t, err)
		_, err = kids.Update(ctx, "kids/p", &item{Want: 9}, kid.Revision) // by hand
		require.NoError(t, err)
		synctest.Wait()
		n, _ = count()
		require.Equal(t, 2, n, "a change by someone else wakes the parent")

		held, err := leases.Get(ctx, "leader")
		require.NoError(t, err)
		_, err = leases.Delete(ctx, "leader", held.Revision)
		require.NoError(t, err)
		_, err = leases.Create(ctx, "leader", lock.Record{Holder: "b"})
		require.NoError(t, err)
		p, err := items.Get(ctx, "items/p")
		require.NoError(t, err)
		_, err = items.Update(ctx, "items/p", &item{Want: 2}, p.Revision)
		require.NoError(t, err)
		synctest.Wait()
		_, err = count()
		require.ErrorIs(t, err, store.ErrGuardFailed, "the deposed leader's child write")
		kid, err = kids.Get(ctx, "kids/p")
		require.NoError(t, err)
		require.Equal(t, 1, kid.Value.Want, "the deposed leader's write changed the child")
		require.Zero(t, c.echoes.size())
		cancel()
		<-done
	})
}

// ensureKid makes kids/p want want.
func ensureKid(ctx context.Context, kids store.Store[*item], want int) error {
	kid, err := kids.Get(ctx, "kids/p")
	switch {
	case errors.Is(err, store.ErrNotFound):
		_, err = kids.Create(ctx, "kids/p", &item{Want: want})
		return err
	case err != nil:
		return err
	case kid.Value.Want == want:
		return nil
	}
	_, err = kids.Update(ctx, "kids/p", &item{Want: want}, kid.Revision)
	return err
}

// TestThroughARequestNotMadeByAControllerIsTheStoreItself: a test's
// request gets the store as it is.
func TestThroughARequestNotMadeByAControllerIsTheStoreItself(t *testing.T) {
	kids := store.NewMemory[*item]()
	require.Equal(t, store.Store[*item](kids), Through(Request[*item]{Store: store.NewMemory[*item]()}, store.Store[*item](kids)))
}
