package running_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/converge-go/converge/internal/invalid"
	"github.com/converge-go/converge/internal/running"
	"github.com/stretchr/testify/require"
)

// TestEveryPackagesSentinelMatchesEveryOther: an error wrapping one
// package's sentinel matches another package's under errors.Is, keeps its
// own message, and matches nothing else (not even an invalid-input error).
func TestEveryPackagesSentinelMatchesEveryOther(t *testing.T) {
	reconcileErr, pruneErr := running.New("reconcile"), running.New("prune")
	err := fmt.Errorf("%w: pruner %q", pruneErr, "p")
	require.ErrorIs(t, err, reconcileErr)
	require.ErrorIs(t, err, pruneErr)
	require.Equal(t, `prune: already running: pruner "p"`, err.Error())
	require.NotErrorIs(t, err, errors.New("reconcile: already running"))
	require.NotErrorIs(t, err, invalid.New("prune"))
	require.NotErrorIs(t, errors.New("other"), reconcileErr)
}
