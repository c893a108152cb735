package reconcile_test

import (
	"testing"

	"github.com/converge-go/converge/reconcile/checkpoint/checkpointtest"
)

// A controller started from its checkpoint while its store is stopped
// reconciles the store as it is once it serves, however it was restored
// meanwhile: rolled back under the same identity (another history:
// re-listed whole, Health.History saying so), rolled forward, emptied,
// replaced by another identity; and a checkpoint seen in the future or
// past its maximum age is refused (checkpointtest.Run, on store.Memory).
func TestFromACheckpointTheStoreIsReconciledAsItIsOnceItServes(t *testing.T) {
	checkpointtest.Run(t, checkpointtest.NewMemoryBackend, checkpointtest.Options{Bubble: true})
}
