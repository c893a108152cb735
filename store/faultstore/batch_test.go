package faultstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
	"github.com/converge-go/converge/store/storetest"
	"github.com/stretchr/testify/require"
)

// Without faults, the store passes the conformance suite, batches
// included.
func TestConformanceWithoutFaults(t *testing.T) {
	storetest.RunWith(t, func(t *testing.T) store.Store[*storetest.Value] {
		mem := store.NewMemory[*storetest.Value]()
		t.Cleanup(func() { mem.Close() })
		return newStore(t, mem, faultstore.Options{})
	}, storetest.Options{RecordsCauses: true}) // the memory store's causes pass through
}

// TestABatchGoesThroughTheFaultsAsOneCall: a batch refused by a fault is
// refused whole before it is sent, and one whose answer is lost is
// applied with each write's answer hidden behind a LostResponseError.
func TestABatchGoesThroughTheFaultsAsOneCall(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory[string]()
	var calls []faultstore.Call
	fault := faultstore.Fail
	s := newStore(t, mem, faultstore.Options{Plan: func(c faultstore.Call) faultstore.Decision {
		calls = append(calls, c)
		return faultstore.Decision{Fault: fault}
	}})
	writes := []store.Write[string]{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}}
	res, err := store.WriteBatch(ctx, s, writes)
	require.ErrorIs(t, err, faultstore.ErrNotSent)
	require.Nil(t, res)
	require.Equal(t, []faultstore.Call{{Op: faultstore.OpBatch, Key: "a"}}, calls, "one call for the batch")
	rev, err := mem.Revision(ctx)
	require.NoError(t, err)
	require.Zero(t, rev, "a refused batch writes nothing")

	fault = faultstore.Lose
	_, err = mem.Create(ctx, "b", "0")
	require.NoError(t, err)
	res, err = store.WriteBatch(ctx, s, writes)
	require.NoError(t, err)
	require.Len(t, res, 2)
	for i, r := range res {
		lost, ok := errors.AsType[*faultstore.LostResponseError[string]](r.Err)
		require.True(t, ok, "write %d: %v, want a LostResponseError", i, r.Err)
		require.ErrorIs(t, r.Err, store.ErrUnavailable)
		require.Equal(t, faultstore.OpBatch, lost.Op)
	}
	lostA, _ := errors.AsType[*faultstore.LostResponseError[string]](res[0].Err)
	require.NoError(t, lostA.Err, "the create of a landed")
	lostB, _ := errors.AsType[*faultstore.LostResponseError[string]](res[1].Err)
	require.ErrorIs(t, lostB.Err, store.ErrExists, "the store's real answer is kept")
	got, err := mem.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, lostA.Object, got)
	require.EqualValues(t, 1, s.Writes())
}
