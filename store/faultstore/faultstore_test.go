package faultstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
	"github.com/stretchr/testify/require"
)

// newStore wraps inner with o, failing t on an error.
func newStore[T any](t *testing.T, inner store.Store[T], o faultstore.Options) *faultstore.Store[T] {
	t.Helper()
	s, err := faultstore.New(inner, o)
	require.NoError(t, err)
	return s
}

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0)) }

// Injected errors and conflicts come at their rates, fail before the call
// reaches the store (ErrNotSent), and only writes the store applied count.
func TestInjectedErrorsAndConflictsNeverReachTheStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := store.NewMemory[int]()
		s := newStore(t, mem, faultstore.Options{Rand: seeded(3),
			Rates: faultstore.Rates{Error: 0.3, Conflict: 0.3, MaxLatency: time.Second}})
		var unavailable, conflicts, ok, created int
		for i := range 200 {
			key := fmt.Sprint("k", i)
			obj, err := s.Create(ctx, key, 0)
			if err != nil {
				require.ErrorIs(t, err, store.ErrUnavailable)
				require.ErrorIs(t, err, faultstore.ErrNotSent)
				_, err := mem.Get(ctx, key)
				require.ErrorIs(t, err, store.ErrNotFound, "a failed Create reached the store")
				unavailable++
				continue
			}
			created++
			_, err = s.Update(ctx, obj.Key, 1, obj.Revision)
			switch {
			case errors.Is(err, store.ErrConflict):
				require.ErrorIs(t, err, faultstore.ErrNotSent)
				conflicts++
			case errors.Is(err, store.ErrUnavailable):
				unavailable++
			case err == nil:
				ok++
				continue
			default:
				t.Fatalf("unexpected error %v", err)
			}
			got, err := mem.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, obj.Revision, got.Revision, "a failed Update reached the store")
		}
		require.InDelta(t, 0.3*300, unavailable, 40)
		require.Positive(t, conflicts)
		require.Equal(t, int64(created+ok), s.Writes(), "only writes the store applied count")
	})
}

// A lost response hides the outcome of a write the store applied: the
// caller sees only store.ErrUnavailable (not ErrNotSent, not the store's
// own error), and the error keeps the real answer.
func TestLostResponseAppliesTheWriteAndHidesItsOutcome(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory[string]()
	s := newStore(t, mem, faultstore.Options{Rates: faultstore.Rates{Lost: 1}})
	_, err := s.Create(ctx, "k", "v")
	lost, ok := errors.AsType[*faultstore.LostResponseError[string]](err)
	require.True(t, ok, "Create = %v, want a LostResponseError", err)
	require.ErrorIs(t, err, store.ErrUnavailable)
	require.NotErrorIs(t, err, faultstore.ErrNotSent)
	got, err := mem.Get(ctx, "k")
	require.NoError(t, err, "the write whose response was lost did not reach the store")
	require.Equal(t, got, lost.Object)
	require.NoError(t, lost.Err)
	require.Equal(t, faultstore.OpCreate, lost.Op)
	require.EqualValues(t, 1, s.Writes())

	_, err = s.Create(ctx, "k", "v")
	lost, ok = errors.AsType[*faultstore.LostResponseError[string]](err)
	require.True(t, ok)
	require.ErrorIs(t, lost.Err, store.ErrExists, "the store's real answer is kept")
	require.NotErrorIs(t, err, store.ErrExists, "the store's real answer is hidden from errors.Is")

	rev, err := mem.Delete(ctx, "k", got.Revision)
	require.NoError(t, err)
	_, err = s.Delete(ctx, "k", rev)
	lost, ok = errors.AsType[*faultstore.LostResponseError[string]](err)
	require.True(t, ok)
	require.ErrorIs(t, lost.Err, store.ErrNotFound)

	_, err = s.Get(ctx, "k")
	require.ErrorIs(t, err, store.ErrNotFound, "Rates draw Lost for writes only: a read goes through")
}

// Rates inject faults only into the calls of their Ops.
func TestRatesInjectOnlyIntoTheirOps(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, store.NewMemory[string](), faultstore.Options{Rates: faultstore.Rates{Ops: faultstore.OpWrites, Error: 1}})
	_, err := s.Create(ctx, "k", "v")
	require.ErrorIs(t, err, faultstore.ErrNotSent)
	_, err = s.Get(ctx, "k")
	require.ErrorIs(t, err, store.ErrNotFound, "a read drew a fault meant for writes")
	_, _, err = s.List(ctx, "")
	require.NoError(t, err)
	_, err = s.Revision(ctx)
	require.NoError(t, err)
}

// The same seed draws the same faults, so a failing run can be replayed.
func TestTheSameSeedDrawsTheSameFaults(t *testing.T) {
	run := func() []bool {
		s := newStore(t, store.NewMemory[int](), faultstore.Options{Rand: seeded(7), Rates: faultstore.Rates{Error: 0.5}})
		var failed []bool
		for i := range 50 {
			_, err := s.Create(context.Background(), fmt.Sprint(i), i)
			failed = append(failed, err != nil)
		}
		return failed
	}
	require.Equal(t, run(), run())
}

// A script decides calls in order, then lets every call through; SetPlan
// replaces it and SetPlan(nil) goes back to the Rates.
func TestScriptDecidesCallsInOrderThenLetsThemThrough(t *testing.T) {
	ctx := context.Background()
	var calls []faultstore.Call
	s := newStore(t, store.NewMemory[string](), faultstore.Options{})
	script := faultstore.Script(faultstore.Decision{Fault: faultstore.Fail}, faultstore.Decision{}, faultstore.Decision{Fault: faultstore.Conflict})
	s.SetPlan(func(c faultstore.Call) faultstore.Decision {
		calls = append(calls, c)
		return script(c)
	})
	_, err := s.Create(ctx, "a", "1")
	require.ErrorIs(t, err, store.ErrUnavailable)
	obj, err := s.Create(ctx, "a", "1")
	require.NoError(t, err)
	_, err = s.Update(ctx, "a", "2", obj.Revision)
	require.ErrorIs(t, err, store.ErrConflict)
	_, err = s.Update(ctx, "a", "2", obj.Revision)
	require.NoError(t, err, "the script is used up")
	require.Equal(t, []faultstore.Call{{Op: faultstore.OpCreate, Key: "a"}, {Op: faultstore.OpCreate, Key: "a"},
		{Op: faultstore.OpUpdate, Key: "a"}, {Op: faultstore.OpUpdate, Key: "a"}}, calls)

	s.SetPlan(nil)
	require.NoError(t, s.SetRates(faultstore.Rates{Error: 1}))
	_, err = s.Get(ctx, "a")
	require.ErrorIs(t, err, store.ErrUnavailable)
	require.NoError(t, s.SetRates(faultstore.Rates{}))
	_, err = s.Get(ctx, "a")
	require.NoError(t, err, "the zero Rates inject nothing")
}

// Out-of-range options are store.ErrInvalid, never a panic.
func TestInvalidOptionsAreErrInvalid(t *testing.T) {
	mem := store.NewMemory[int]()
	for name, o := range map[string]faultstore.Options{
		"negative rate":    {Rates: faultstore.Rates{Error: -0.1}},
		"rates above one":  {Rates: faultstore.Rates{Error: 0.6, Lost: 0.6}},
		"NaN":              {Rates: faultstore.Rates{Conflict: nanValue()}},
		"negative latency": {Rates: faultstore.Rates{MaxLatency: -1}},
		"negative breaks":  {Rates: faultstore.Rates{BreakWatchEvery: -1}},
		"unknown op":       {Rates: faultstore.Rates{Ops: 1 << 9, Error: 0.1}},
		"rates and a plan": {Rates: faultstore.Rates{Error: 0.1}, Plan: faultstore.Script()},
	} {
		_, err := faultstore.New[int](mem, o)
		require.ErrorIs(t, err, store.ErrInvalid, name)
	}
	_, err := faultstore.New[int](nil, faultstore.Options{})
	require.ErrorIs(t, err, store.ErrInvalid, "nil store")
	s := newStore(t, mem, faultstore.Options{})
	require.ErrorIs(t, s.SetRates(faultstore.Rates{Lost: 2}), store.ErrInvalid)
}

func nanValue() float64 { zero := 0.0; return zero / zero }

// Compact reaches the wrapped store when it can compact, and is
// store.ErrInvalid when it cannot.
func TestCompactPassesThroughOrIsInvalid(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory[int]()
	s := newStore(t, mem, faultstore.Options{})
	_, err := mem.Create(ctx, "a", 1)
	require.NoError(t, err)
	_, err = mem.Create(ctx, "b", 1)
	require.NoError(t, err)
	require.NoError(t, s.Compact(ctx, 2))
	_, err = mem.Watch(ctx, "", 0)
	require.ErrorIs(t, err, store.ErrCompacted, "Compact did not reach the wrapped store")

	plain := newStore[int](t, struct{ store.Store[int] }{mem}, faultstore.Options{})
	require.ErrorIs(t, plain.Compact(ctx, 1), store.ErrInvalid)
}

type otherCodec struct{ store.JSON[int] }

type encodedStore struct {
	store.Store[int]
}

func (encodedStore) Codec() store.Codec[int] { return otherCodec{} }

// The Store reports the wrapped store's codec (store.Encoded), or JSON for
// a store that does not say.
func TestCodecIsTheWrappedStoresOrJSON(t *testing.T) {
	mem := store.NewMemory[int]()
	s := newStore[int](t, encodedStore{mem}, faultstore.Options{})
	var enc store.Encoded[int] = s
	require.Equal(t, store.Codec[int](otherCodec{}), enc.Codec())
	require.Equal(t, store.Codec[int](store.JSON[int]{}), newStore[int](t, mem, faultstore.Options{}).Codec())
}

// Op and Fault print their names.
func TestOpsAndFaultsPrintTheirNames(t *testing.T) {
	require.Equal(t, "Create|Update|Delete|Batch", faultstore.OpWrites.String())
	require.Equal(t, "Watch", faultstore.OpWatch.String())
	require.Equal(t, "Identity", faultstore.OpIdentity.String())
	require.Equal(t, "Get|List|Revision|Watch|Identity", faultstore.OpReads.String())
	require.Equal(t, "Batch", faultstore.OpBatch.String())
	require.Equal(t, "Op(0x200)", faultstore.Op(1<<9).String())
	require.Equal(t, "Compacted", faultstore.Compacted.String())
	require.Equal(t, "Fault(9)", faultstore.Fault(9).String())
	require.Equal(t, "SilentHang", faultstore.SilentHang.String())
	require.Equal(t, "Outage(9)", faultstore.Outage(9).String())
}
