package storetest

import (
	"context"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// Traceparents the cause clause writes with.
const (
	causeA = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	causeB = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
)

// causeDelivered: a write made with a cause (store.WithCause) succeeds on
// every backend; a backend that records causes (Options.RecordsCauses)
// delivers it with the revision's watch event, and only there: a write
// without one, or with a value that is no traceparent, has none. A backend
// that records none delivers every event without a cause.
func (s *suite) causeDelivered(t *testing.T, st store.Store[*Value]) {
	ctx := t.Context()
	w, err := st.Watch(ctx, "", 0)
	require.NoError(t, err)
	defer w.Stop()
	a, err := st.Create(store.WithCause(ctx, causeA), "cause/a", val(1))
	require.NoError(t, err)
	a, err = st.Update(ctx, "cause/a", val(2), a.Revision)
	require.NoError(t, err)
	a, err = st.Update(store.WithCause(ctx, "00-not-a-traceparent"), "cause/a", val(3), a.Revision)
	require.NoError(t, err)
	_, err = st.Delete(store.WithCause(ctx, causeB), "cause/a", a.Revision)
	require.NoError(t, err)
	want := []string{causeA, "", "", causeB}
	if !s.opts.RecordsCauses {
		want = []string{"", "", "", ""}
	}
	for i, c := range want {
		ev := next(t, w)
		require.Equal(t, c, ev.Cause, "cause of event %d (%v at revision %d)", i+1, ev.Type, ev.Object.Revision)
	}
	require.Empty(t, store.CauseFrom(context.Background()))
}
