package store_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// racing wraps a store and, before each of the first n writes of a kind,
// writes the key itself, so that the caller's write loses the race.
type racing struct {
	store.Store[*item]
	updates, creates int // races left
	writes           int // writes that reached the inner store from the caller
}

func (r *racing) Update(ctx context.Context, key string, v *item, rev int64, guards ...store.Guard) (store.Object[*item], error) {
	if r.updates > 0 {
		r.updates--
		if _, err := r.Store.Update(ctx, key, &item{N: -1}, rev); err != nil {
			return store.Object[*item]{}, err
		}
	}
	r.writes++
	return r.Store.Update(ctx, key, v, rev, guards...)
}

func (r *racing) Create(ctx context.Context, key string, v *item, guards ...store.Guard) (store.Object[*item], error) {
	if r.creates > 0 {
		r.creates--
		if _, err := r.Store.Create(ctx, key, &item{N: 100}); err != nil {
			return store.Object[*item]{}, err
		}
	}
	r.writes++
	return r.Store.Create(ctx, key, v, guards...)
}

func inc(cur *item) (*item, error) { return &item{N: cur.N + 1}, nil }

func TestModifyRetriesConflicts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := store.NewMemory[*item]()
		defer m.Close()
		_, err := m.Create(ctx, "k", &item{N: 1})
		require.NoError(t, err)
		r := &racing{Store: m, updates: 3}
		start := time.Now()
		obj, err := store.Modify(ctx, r, "k", inc, store.ModifyOptions{Backoff: time.Second, MaxBackoff: 10 * time.Second})
		require.NoError(t, err)
		require.Equal(t, 0, obj.Value.N, "the mutation applies to the value that won the race (-1)")
		require.Equal(t, 4, r.writes)
		// Backoff doubles: waits drawn from [0.5s,1s], [1s,2s], [2s,4s].
		require.GreaterOrEqual(t, time.Since(start), 3500*time.Millisecond)
		require.LessOrEqual(t, time.Since(start), 7*time.Second)
	})
}

func TestModifyGivesUpAfterAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := store.NewMemory[*item]()
		defer m.Close()
		_, err := m.Create(ctx, "k", &item{})
		require.NoError(t, err)
		r := &racing{Store: m, updates: 100}
		_, err = store.Modify(ctx, r, "k", inc, store.ModifyOptions{Attempts: 4})
		require.ErrorIs(t, err, store.ErrConflict)
		require.ErrorContains(t, err, "4 attempts")
		require.Equal(t, 4, r.writes)
	})
}

func TestModifyHonoursContextDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		defer cancel()
		m := store.NewMemory[*item]()
		defer m.Close()
		_, err := m.Create(ctx, "k", &item{})
		require.NoError(t, err)
		r := &racing{Store: m, updates: 1000}
		start := time.Now()
		_, err = store.Modify(ctx, r, "k", inc, store.ModifyOptions{Attempts: 1000, Backoff: time.Minute, MaxBackoff: time.Hour})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorIs(t, err, store.ErrConflict, "the last conflict is kept")
		require.Equal(t, 90*time.Second, time.Since(start), "returns when the deadline passes, not after the backoff")
	})
}

func TestModifyDoesNotRetryOtherErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := store.NewMemory[*item]()
		defer m.Close()
		_, err := m.Create(ctx, "k", &item{})
		require.NoError(t, err)

		calls := 0
		wrapped := errors.Join(errors.New("not now"), store.ErrConflict)
		_, err = store.Modify(ctx, m, "k", func(*item) (*item, error) { calls++; return nil, wrapped })
		require.Same(t, wrapped, err, "mutate's error is returned unchanged, even if it wraps ErrConflict")
		require.Equal(t, 1, calls)

		_, err = store.Modify(ctx, m, "missing", func(*item) (*item, error) { calls++; return &item{}, nil })
		require.ErrorIs(t, err, store.ErrNotFound)
		require.Equal(t, 1, calls, "mutate is not called for a missing key")

		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		_, err = store.Modify(cancelled, m, "k", inc)
		require.ErrorIs(t, err, context.Canceled)
	})
}

// A key deleted while Modify's mutate runs ends Modify with ErrNotFound on
// the next round: the update is not applied to a key that is gone.
func TestModifyOfAKeyDeletedDuringItsRoundIsNotFound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := store.NewMemory[*item]()
		defer m.Close()
		obj, err := m.Create(ctx, "k", &item{})
		require.NoError(t, err)
		_, err = store.Modify(ctx, m, "k", func(cur *item) (*item, error) {
			if _, err := m.Delete(ctx, "k", obj.Revision); err != nil {
				return nil, err
			}
			return &item{N: 1}, nil
		})
		require.ErrorIs(t, err, store.ErrNotFound, "the next round finds the key gone")
	})
}

// CreateOrUpdate retries a round lost to a racing writer: a create that
// loses to someone else's create updates their value, and an update that
// loses to a delete creates the key anew.
func TestCreateOrUpdateRetriesARoundLostToACreateOrDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := store.NewMemory[*item]()
		defer m.Close()
		upsert := func(cur *item, exists bool) (*item, error) {
			if !exists {
				return &item{N: 1}, nil
			}
			return &item{N: cur.N + 10}, nil
		}
		// Someone else creates the key between our Get and Create: the
		// next round updates their value.
		r := &racing{Store: m, creates: 1}
		obj, err := store.CreateOrUpdate(ctx, r, "k", upsert)
		require.NoError(t, err)
		require.Equal(t, 110, obj.Value.N)
		require.Equal(t, 2, r.writes)

		// An update that loses to a delete creates on the next round.
		r = &racing{Store: m}
		first := true
		obj, err = store.CreateOrUpdate(ctx, r, "k", func(cur *item, exists bool) (*item, error) {
			if first {
				first = false
				cur, err := m.Get(ctx, "k")
				require.NoError(t, err)
				_, err = m.Delete(ctx, "k", cur.Revision)
				require.NoError(t, err)
			}
			return upsert(cur, exists)
		})
		require.NoError(t, err)
		require.Equal(t, 1, obj.Value.N)
		require.Equal(t, obj.Revision, obj.CreateRevision)
	})
}

// TestModifyRefusesInvalidOptionsAndWritesNothing: a negative value or more
// than one ModifyOptions is refused with ErrInvalid before anything is read
// or written.
func TestModifyRefusesInvalidOptionsAndWritesNothing(t *testing.T) {
	ctx := t.Context()
	s := store.NewMemory[int]()
	obj, err := s.Create(ctx, "k", 1)
	require.NoError(t, err)
	inc := func(v int) (int, error) { return v + 1, nil }
	for name, opts := range map[string][]store.ModifyOptions{
		"negative attempts": {{Attempts: -1}},
		"negative backoff":  {{Backoff: -time.Second}},
		"negative cap":      {{MaxBackoff: -time.Second}},
		"two":               {{}, {}},
	} {
		_, err := store.Modify(ctx, s, "k", inc, opts...)
		require.ErrorIs(t, err, store.ErrInvalid, name)
		_, err = store.CreateOrUpdate(ctx, s, "k", func(v int, _ bool) (int, error) { return v + 1, nil }, opts...)
		require.ErrorIs(t, err, store.ErrInvalid, name)
	}
	got, err := s.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, obj.Revision, got.Revision, "a refused call wrote")
}
