package invalid_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/converge-go/converge/internal/invalid"
	"github.com/stretchr/testify/require"
)

// TestEveryPackagesSentinelMatchesEveryOther: an error wrapping one
// package's sentinel matches another package's under errors.Is, keeps its
// own message, and matches nothing else.
func TestEveryPackagesSentinelMatchesEveryOther(t *testing.T) {
	storeErr, queueErr := invalid.New("store"), invalid.New("queue")
	err := fmt.Errorf("%w: key is empty", queueErr)
	require.ErrorIs(t, err, storeErr)
	require.ErrorIs(t, err, queueErr)
	require.Equal(t, "queue: invalid input: key is empty", err.Error())
	require.NotErrorIs(t, err, errors.New("store: invalid input"))
	require.NotErrorIs(t, errors.New("other"), storeErr)
}
