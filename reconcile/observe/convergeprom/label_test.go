package convergeprom

import (
	"testing"

	"github.com/converge-go/converge/reconcile"
)

// TestTheResultLabelIsControllerRuntimesForEveryOutcome: every failure,
// terminal and panicked ones included, is "error" in reconcile_total, as
// controller-runtime counts it; a conflict keeps a value of its own.
func TestTheResultLabelIsControllerRuntimesForEveryOutcome(t *testing.T) {
	for o, want := range map[reconcile.Outcome]string{
		reconcile.Success: "success", reconcile.Requeue: "requeue", reconcile.RequeueAfter: "requeue_after",
		reconcile.Failure: "error", reconcile.TerminalFailure: "error", reconcile.Panicked: "error",
		reconcile.Conflict: "conflict",
	} {
		if got := resultLabel(o); got != want {
			t.Errorf("resultLabel(%s) = %q, want %q", o, got, want)
		}
	}
}
