package intent_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/intent"
)

// TestDecideFollowsTheTableForEveryInput walks every input of Decide — no
// record, a pending one, a done one; for the object's generation, an older
// or a newer one; another attempt wanted or not; each state the world can
// report, and one it cannot — and checks the decision against the table
// of the documentation: a pending record is settled by the world alone
// (acted on only when the world has nothing of it), a done one begins
// another attempt only for another generation or when one is wanted.
func TestDecideFollowsTheTableForEveryInput(t *testing.T) {
	const gen = 5
	states := []intent.State{intent.Absent, intent.Running, intent.Finished, intent.State(9)}
	n := 0
	for _, kind := range []string{"none", "pending", "done"} {
		for _, recGen := range []int64{gen, gen - 1, gen + 1} {
			for _, again := range []bool{false, true} {
				for _, found := range states {
					n++
					var rec intent.Record[int]
					if kind != "none" {
						rec = intent.Record[int]{ID: "k.c1.g5.a1", Generation: recGen, Attempt: 1, Done: kind == "done", Result: 7}
					}
					var want intent.Decision
					switch {
					case kind == "none":
						want = intent.Begin
					case kind == "pending" && found == intent.Absent:
						want = intent.Act
					case kind == "pending" && found == intent.Finished:
						want = intent.Judge
					case kind == "pending":
						want = intent.Adopt // Running, or a state Decide does not know
					case recGen != gen || again:
						want = intent.Begin
					default:
						want = intent.Done
					}
					got := intent.Decide(rec, gen, again, found)
					require.Equal(t, want, got, "record %s of generation %d, again %v, world %v", kind, recGen, again, found)
				}
			}
		}
	}
	require.Equal(t, 3*3*2*4, n)
}

// TestDecisionsAndStatesHaveNames: every constant prints as its name.
func TestDecisionsAndStatesHaveNames(t *testing.T) {
	for d, name := range map[intent.Decision]string{intent.Done: "Done", intent.Begin: "Begin", intent.Act: "Act", intent.Adopt: "Adopt", intent.Judge: "Judge", 42: "Decision(?)"} {
		require.Equal(t, name, d.String())
	}
	for s, name := range map[intent.State]string{intent.Absent: "Absent", intent.Running: "Running", intent.Finished: "Finished", 42: "State(?)"} {
		require.Equal(t, name, s.String())
	}
}
