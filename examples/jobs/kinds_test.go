package main

import (
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/stretchr/testify/require"
)

// TestTheDaemonsStoreRefusesASpecNoAttemptCanRunNamingTheField: the
// daemon's layer admits jobs by kinds.json, so a job with no command, or
// with negative retries or timeout, is refused where it is written and
// never stored; the reconciler's own check (checkSpec) agrees on each.
func TestTheDaemonsStoreRefusesASpecNoAttemptCanRunNamingTheField(t *testing.T) {
	s, _, closeStore, err := openStore(DaemonConfig{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, closeStore()) })
	for field, spec := range map[string]Spec{
		"spec.command": {Command: ""},
		"spec.retries": {Command: "true", Retries: -1},
		"spec.timeout": {Command: "true", Timeout: Duration(-time.Second)},
	} {
		_, err := s.Create(t.Context(), KeyPrefix+"bad", &Job{Spec: spec})
		require.ErrorIs(t, err, apistore.ErrRejected, field)
		require.ErrorIs(t, err, store.ErrInvalid, field)
		require.ErrorContains(t, err, field)
		require.Error(t, checkSpec(spec), "the reconciler's check refuses %+v too", spec)
	}
	_, err = s.Get(t.Context(), KeyPrefix+"bad")
	require.ErrorIs(t, err, store.ErrNotFound, "nothing is stored")
	for _, spec := range []Spec{{Command: "true"}, {Command: "sleep", Args: []string{"1"}, Retries: 2, Timeout: Duration(90 * time.Second)}, {Command: "true", Timeout: Duration(1500 * time.Millisecond)}} {
		obj, err := s.Create(t.Context(), KeyPrefix+"good", &Job{Spec: spec})
		require.NoError(t, err, "%+v", spec)
		require.NoError(t, checkSpec(spec))
		_, err = s.Delete(t.Context(), obj.Key, obj.Revision)
		require.NoError(t, err)
	}
}
