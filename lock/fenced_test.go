package lock_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

func TestFencedWritesOfADeposedTermAreRejected(t *testing.T) {
	ctx := context.Background()
	// Guards check keys of the same store: the lease record and the data
	// share one byte store through two typed views.
	raw := store.NewMemory[[]byte]()
	leases := store.NewView[lock.Record](raw, store.JSON[lock.Record]{})
	data := store.NewView[string](raw, store.JSON[string]{})
	a, err := lock.NewLease(leases, "leader", lock.LeaseOptions{Holder: "a"})
	require.NoError(t, err)
	lk, err := a.Acquire(ctx)
	require.NoError(t, err)
	fs, err := lock.Fenced[string](data, lk)
	require.NoError(t, err)

	obj, err := fs.Create(ctx, "config", "v1")
	require.NoError(t, err, "the current term writes")
	obj, err = fs.Update(ctx, "config", "v2", obj.Revision)
	require.NoError(t, err)

	// Another process takes the lease over.
	rec, err := leases.Get(ctx, "leader")
	require.NoError(t, err)
	_, err = leases.Delete(ctx, "leader", rec.Revision)
	require.NoError(t, err)
	_, err = leases.Create(ctx, "leader", lock.Record{Holder: "b"})
	require.NoError(t, err)
	_, err = fs.Update(ctx, "config", "v3", obj.Revision)
	require.ErrorIs(t, err, store.ErrGuardFailed)
	_, err = fs.Delete(ctx, "config", obj.Revision)
	require.ErrorIs(t, err, store.ErrGuardFailed)
	_, err = fs.Create(ctx, "other", "x")
	require.ErrorIs(t, err, store.ErrGuardFailed)
	got, err := data.Get(ctx, "config")
	require.NoError(t, err)
	require.Equal(t, "v2", got.Value, "a deposed term's write changed the store")

	// Once the term is over, writes are refused before reaching the store.
	require.NoError(t, lk.Release(ctx))
	_, err = fs.Update(ctx, "config", "v4", got.Revision)
	require.ErrorIs(t, err, store.ErrGuardFailed)
}

func TestFencedRefusesNilInputs(t *testing.T) {
	_, err := lock.Fenced[string](nil, nil)
	require.ErrorIs(t, err, lock.ErrInvalid)
}

// Code outside a reconcile that writes on behalf of a term of leadership
// wraps its store with Fenced: once another process leads, its writes fail.
func ExampleFenced() {
	ctx := context.Background()
	raw := store.NewMemory[[]byte]() // one store for the lease and the data
	leases := store.NewView[lock.Record](raw, store.JSON[lock.Record]{})
	data := store.NewView[string](raw, store.JSON[string]{})
	lease, _ := lock.NewLease(leases, "leader", lock.LeaseOptions{Holder: "a"})
	lk, err := lease.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lk.Release(ctx)
	fs, _ := lock.Fenced[string](data, lk)
	_, err = fs.Create(ctx, "config", "v1")
	fmt.Println("write while leading:", err)
	// Output:
	// write while leading: <nil>
}

func TestNewLeaseRefusesANilPointerStoreAndAcquireStopsOnInvalidInput(t *testing.T) {
	var nilStore *store.Memory[lock.Record]
	_, err := lock.NewLease(nilStore, "leader", lock.LeaseOptions{Holder: "a"})
	require.ErrorIs(t, err, lock.ErrInvalid)

	broken := store.NewView[lock.Record](nil, store.JSON[lock.Record]{}) // every call: store.ErrInvalid
	l, err := lock.NewLease(broken, "leader", lock.LeaseOptions{Holder: "a"})
	require.NoError(t, err)
	_, err = l.Acquire(context.Background())
	require.ErrorIs(t, err, store.ErrInvalid, "Acquire must not retry invalid input forever")
}

func TestAFencedWriteThatChangesNothingIsStillRejectedOnceTheTermIsDeposed(t *testing.T) {
	ctx := context.Background()
	raw := store.NewMemory[[]byte]()
	leases := store.NewView[lock.Record](raw, store.JSON[lock.Record]{})
	data := store.NewView[string](raw, store.JSON[string]{})
	a, err := lock.NewLease(leases, "leader", lock.LeaseOptions{Holder: "a"})
	require.NoError(t, err)
	lk, err := a.Acquire(ctx)
	require.NoError(t, err)
	fs, err := lock.Fenced[string](data, lk)
	require.NoError(t, err)
	obj, err := fs.Create(ctx, "config", "v1")
	require.NoError(t, err)
	same := func(cur string) (string, error) { return cur, nil }
	got, err := store.Modify(ctx, fs, "config", same)
	require.NoError(t, err, "the current term's write that changes nothing")
	require.Equal(t, obj.Revision, got.Revision, "a write that changes nothing is not stored")

	rec, err := leases.Get(ctx, "leader")
	require.NoError(t, err)
	_, err = leases.Delete(ctx, "leader", rec.Revision)
	require.NoError(t, err)
	_, err = leases.Create(ctx, "leader", lock.Record{Holder: "b"})
	require.NoError(t, err)
	_, err = store.Modify(ctx, fs, "config", same)
	require.ErrorIs(t, err, store.ErrGuardFailed, "a deposed term's write that changes nothing")
	require.ErrorIs(t, store.Check(ctx, fs, "config", obj.Revision), store.ErrGuardFailed, "a deposed term's check")

	require.NoError(t, lk.Release(ctx))
	_, err = store.Modify(ctx, fs, "config", same)
	require.ErrorIs(t, err, store.ErrGuardFailed, "a write that changes nothing, once the term is over")
}
