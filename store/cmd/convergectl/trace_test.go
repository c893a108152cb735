package main

import (
	"testing"

	"github.com/converge-go/converge/store/storetest"
	"github.com/stretchr/testify/require"
)

// TestAWriteCarriesTheTraceparentOfItsEnvironmentAsItsCause: an apply
// run with $TRACEPARENT set sends it as the write's cause, which the
// server's store delivers with the revision's watch event; without it, or
// with a value that is no traceparent, the write has none.
func TestAWriteCarriesTheTraceparentOfItsEnvironmentAsItsCause(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, env := range []struct{ set, want string }{{tp, tp}, {"", ""}, {"garbage", ""}} {
		t.Run(env.set, func(t *testing.T) {
			m, url := serveLayer(t)
			w, err := m.Watch(t.Context(), "", 0)
			require.NoError(t, err)
			defer w.Stop()
			t.Setenv("TRACEPARENT", env.set)
			r := ctl(t, url, `{"spec":{"n":1}}`, "apply", "apps/a")
			require.Equal(t, exitOK, r.code, r.stderr)
			ev := storetest.NextEvent(t, w)
			require.Equal(t, env.want, ev.Cause)
		})
	}
}
