package robustness_test

import (
	"math"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/converge-go/converge/reconcile/internal/robustness"
)

// knownAs is an ambiguous write that the client saw fail at ended and whose
// real outcome the store side knew (known) or only the fault injector kept.
func knownAs(client int, call, ended int64, in robustness.Input, actual robustness.Output, known bool) robustness.Op {
	o := ambiguous(client, call, in)
	o.Ended, o.Actual, o.Known = ended, &actual, known
	return o
}

func TestResolveReplacesOnlyOutcomesTheStoreSideKnew(t *testing.T) {
	applied := knownAs(0, 0, 5, create(0, v1), ok(v1, 1, 1), true)
	refused := knownAs(1, 1, 6, create(1, v2), res(robustness.ResultFailed), true)
	conflict := knownAs(2, 2, 7, update(0, v2, 9), res(robustness.ResultConflict), true)
	injected := knownAs(3, 3, 8, del(0, 1), robustness.Output{Result: robustness.ResultOK, Rev: 2}, false)
	unknown := ambiguous(4, 4, create(2, v1))
	read := op(5, 9, 10, get(0), res(robustness.ResultNotFound))
	in := []robustness.Op{applied, refused, conflict, injected, unknown, read}

	got := robustness.Resolve(in)

	want := []robustness.Op{applied, conflict, injected, unknown, read}
	want[0].Output, want[0].Return = ok(v1, 1, 1), 5
	want[1].Output, want[1].Return = res(robustness.ResultConflict), 7
	if len(got) != len(want) {
		t.Fatalf("Resolve kept %d operations, want %d (the refused write left out): %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Client != w.Client || g.Input != w.Input || g.Output != w.Output || g.Call != w.Call || g.Return != w.Return {
			t.Errorf("operation %d: got %+v, want %+v", i, g, w)
		}
	}
	if in[0].Return != math.MaxInt64 || in[0].Output.Result != robustness.ResultUnknown {
		t.Errorf("Resolve modified its input: %+v", in[0])
	}
}

// TestResolvedHistoriesPinKnownOutcomes shows that resolving makes the
// check stricter, never looser: a history that is linearizable while a
// write is ambiguous (it may not have happened) is illegal once the store
// side's answer says it happened, or that it did not.
func TestResolvedHistoriesPinKnownOutcomes(t *testing.T) {
	tests := []struct {
		name  string
		write robustness.Op
	}{
		{"applied but a later read misses it", knownAs(0, 0, 5, create(0, v1), ok(v1, 1, 1), true)},
		{"refused but a later read sees it", knownAs(0, 0, 5, create(0, v1), res(robustness.ResultFailed), true)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			read := op(1, 6, 7, get(0), res(robustness.ResultNotFound))
			if tc.write.Actual.Result == robustness.ResultFailed {
				read.Output = ok(v1, 1, 1)
			}
			history := []robustness.Op{tc.write, read}
			unresolved := tc.write
			unresolved.Known = false
			if got, _ := robustness.Check([]robustness.Op{unresolved, read}, 0, 0); got != porcupine.Ok {
				t.Fatalf("with the write ambiguous the history checks %s, want %s", got, porcupine.Ok)
			}
			if got, _ := robustness.Check(history, 0, 0); got != porcupine.Illegal {
				t.Errorf("with the store side's answer known the history checks %s, want %s", got, porcupine.Illegal)
			}
		})
	}
}
