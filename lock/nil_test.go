package lock

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// Every exported constructor and method of package lock, given nil or zero
// inputs, returns an error matching ErrInvalid (or its documented zero
// answer): never a panic.
func TestNilAndZeroInputsAreRefusedNeverAPanic(t *testing.T) {
	ctx := context.Background()
	var nilCtx context.Context
	lead := func(context.Context) error { return nil }
	opts := LeaseOptions{Holder: "a"}
	invalid := map[string]func() error{
		"NewLease with a nil store": func() error {
			_, err := NewLease(nil, "lease", opts)
			return err
		},
		"NewLease with an empty key": func() error {
			_, err := NewLease(store.NewMemory[Record](), "", opts)
			return err
		},
		"NewLease with zero options": func() error {
			_, err := NewLease(store.NewMemory[Record](), "lease", LeaseOptions{})
			return err
		},
		"Acquire with a nil context": func() error {
			l, err := NewLease(store.NewMemory[Record](), "lease", opts)
			require.NoError(t, err)
			_, err = l.Acquire(nilCtx)
			return err
		},
		"TryAcquire with a nil context": func() error {
			l, err := NewLease(store.NewMemory[Record](), "lease", opts)
			require.NoError(t, err)
			_, _, err = l.TryAcquire(nilCtx)
			return err
		},
		"Acquire on a zero Lease": func() error {
			_, err := new(Lease).Acquire(ctx)
			return err
		},
		"TryAcquire on a nil *Lease": func() error {
			_, _, err := (*Lease)(nil).TryAcquire(ctx)
			return err
		},
		"NewElector with a nil locker": func() error {
			_, err := NewElector(nil, ElectorOptions{})
			return err
		},
		"NewElector with a nil *Lease": func() error {
			_, err := NewElector((*Lease)(nil), ElectorOptions{})
			return err
		},
		"NewElector with negative options": func() error {
			l, err := NewLease(store.NewMemory[Record](), "lease", opts)
			require.NoError(t, err)
			_, err = NewElector(l, ElectorOptions{RetryDelay: -1})
			return err
		},
		"Run on a zero Elector": func() error { return new(Elector).Run(ctx, lead) },
		"Run on a nil *Elector": func() error { return (*Elector)(nil).Run(ctx, lead) },
		"Run with a nil context": func() error {
			l, err := NewLease(store.NewMemory[Record](), "lease", opts)
			require.NoError(t, err)
			e, err := NewElector(l, ElectorOptions{})
			require.NoError(t, err)
			return e.Run(nilCtx, lead)
		},
		"Run with a nil lead": func() error {
			l, err := NewLease(store.NewMemory[Record](), "lease", opts)
			require.NoError(t, err)
			e, err := NewElector(l, ElectorOptions{})
			require.NoError(t, err)
			return e.Run(ctx, nil)
		},
		"Keyed.Lock with a nil context": func() error {
			var k Keyed[string]
			return k.Lock(nilCtx, "a")
		},
	}
	for name, call := range invalid {
		t.Run(name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { err = call() })
			require.ErrorIs(t, err, ErrInvalid)
		})
	}

	t.Run("zero answers", func(t *testing.T) {
		require.NotPanics(t, func() {
			lk, ok := FromContext(nilCtx)
			require.False(t, ok)
			require.Nil(t, lk)
			require.False(t, (*Elector)(nil).IsLeader())
			require.False(t, new(Elector).IsLeader())
			var k Keyed[string]
			require.ErrorIs(t, k.Unlock("a"), ErrNotLocked)
			require.True(t, k.TryLock("a"))
			require.NoError(t, k.Unlock("a"))
		})
	})

	t.Run("Release with a nil context", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m := store.NewMemory[Record]()
			defer m.Close()
			l, err := NewLease(m, "lease", opts)
			require.NoError(t, err)
			lk, ok, err := l.TryAcquire(ctx)
			require.NoError(t, err)
			require.True(t, ok)
			require.NotPanics(t, func() { err = lk.Release(nilCtx) })
			require.ErrorIs(t, err, ErrInvalid)
			require.NoError(t, lk.Release(ctx))
		})
	})
}
