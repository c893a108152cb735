package resource_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

type fSpec struct{ Size int }
type fStatus struct{ Seen int }
type fRes = resource.Resource[fSpec, fStatus]

// TestWriteErrorPutsTheErrorInStatusWithReadyFalseAndReturnsIt: the error
// is in the Ready condition (False, the reason, its text), Status and spec
// are kept, ObservedGeneration recorded, and the error comes back as it
// was given, terminal or not.
func TestWriteErrorPutsTheErrorInStatusWithReadyFalseAndReturnsIt(t *testing.T) {
	s, err := apistore.New(store.NewMemory[*fRes](), resource.Kind[fSpec, fStatus]{})
	require.NoError(t, err)
	obj, err := resource.PutSpec(t.Context(), s, "f/a", fSpec{Size: 2})
	require.NoError(t, err)
	obj, err = resource.WriteStatus(t.Context(), s, obj, fStatus{Seen: 7})
	require.NoError(t, err)

	bad := reconcile.Terminal(errors.New("size 2 is not offered"))
	got := resource.WriteError(t.Context(), s, obj, "Invalid", bad)
	require.Equal(t, bad, got)
	cur, err := s.Get(t.Context(), "f/a")
	require.NoError(t, err)
	c, ok := resource.FindCondition(cur.Value.Conditions, resource.ConditionReady)
	require.True(t, ok)
	require.Equal(t, resource.ConditionFalse, c.Status)
	require.Equal(t, "Invalid", c.Reason)
	require.Equal(t, bad.Error(), c.Message)
	require.Equal(t, fStatus{Seen: 7}, cur.Value.Status)
	require.Equal(t, fSpec{Size: 2}, cur.Value.Spec)
	require.Equal(t, cur.Value.Generation, cur.Value.ObservedGeneration)

	// The same error again writes nothing.
	require.Equal(t, bad, resource.WriteError(t.Context(), s, cur, "Invalid", bad))
	again, err := s.Get(t.Context(), "f/a")
	require.NoError(t, err)
	require.Equal(t, cur.Revision, again.Revision)
}

// TestWriteErrorThatCannotWriteIsRetriedNotTerminal: a stale object's
// write conflicts: the conflict is returned, not the terminal error, so
// the key is reconciled again and the error written then.
func TestWriteErrorThatCannotWriteIsRetriedNotTerminal(t *testing.T) {
	s, err := apistore.New(store.NewMemory[*fRes](), resource.Kind[fSpec, fStatus]{})
	require.NoError(t, err)
	old, err := resource.PutSpec(t.Context(), s, "f/a", fSpec{Size: 1})
	require.NoError(t, err)
	_, err = resource.PutSpec(t.Context(), s, "f/a", fSpec{Size: 3})
	require.NoError(t, err)
	got := resource.WriteError(t.Context(), s, old, "Invalid", reconcile.Terminal(errors.New("no")))
	require.ErrorIs(t, got, store.ErrConflict)
	require.NotErrorIs(t, got, reconcile.ErrTerminal)
	require.NoError(t, resource.WriteError(t.Context(), s, old, "Invalid", nil))
}
