package reconcile_test

import (
	"testing"

	"github.com/converge-go/converge/reconcile/checkpointtest"
)

// A controller started from its checkpoint while its store is stopped
// reconciles the store as it is once it serves, however it was restored
// meanwhile: rolled back under the same identity (another history:
// re-listed whole, Health.History saying so), rolled forward, emptied,
// replaced by another identity; and a checkpoint seen in the future or
// past its maximum age is refused (checkpointtest.Run, on store.Memory).
// Its watches either end when the store stops (as bolt's, or over HTTP),
// or stay open, silent, and resume on the restored store after the
// revision they had reached (as etcd's client's).
func TestFromACheckpointTheStoreIsReconciledAsItIsOnceItServes(t *testing.T) {
	for _, resume := range []bool{false, true} {
		t.Run(map[bool]string{false: "WatchesEnd", true: "WatchesResume"}[resume], func(t *testing.T) {
			checkpointtest.Run(t, func(t *testing.T) checkpointtest.Backend { return checkpointtest.NewMemoryBackend(t, resume) },
				checkpointtest.Options{Bubble: true})
		})
	}
}
