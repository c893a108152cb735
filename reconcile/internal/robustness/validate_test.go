package robustness_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/converge-go/converge/reconcile/internal/robustness"
	"github.com/converge-go/converge/store"
)

// smallRun records a short run on the memory store.
func smallRun(t *testing.T) *robustness.Report {
	t.Helper()
	cfg := robustness.DefaultConfig(7)
	cfg.Ops = 600
	cfg.FailAfterCommit = 0.2
	r, err := robustness.Record(t.Context(), t, memoryBackend(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Watch.Events) < 10 {
		t.Fatalf("run too small to tamper with: %d events", len(r.Watch.Events))
	}
	return r
}

func TestValidateWatchCatchesTampering(t *testing.T) {
	r := smallRun(t)
	keys := robustness.Keys(r.Config.Keys)
	if err := robustness.ValidateWatch(r.Ops, r.Watch.Events, r.Start, r.Revision, keys); err != nil {
		t.Fatalf("untouched run: %v", err)
	}
	evs := r.Watch.Events
	mid := len(evs) / 2
	// A write that failed before commit, and one whose lost response says
	// it did not commit, are writes that must not appear.
	var failed robustness.Op
	for _, op := range r.Ops {
		if op.Input.Op == robustness.OpCreate && op.Output.Result == robustness.ResultFailed {
			failed = op
			break
		}
	}
	if failed.Input.Op == 0 {
		t.Fatal("run has no failed Create to forge an event for")
	}
	forged := slices.Clone(evs)
	forged[mid].Object.Value = failed.Input.Value

	tests := []struct {
		name   string
		events []store.Event[robustness.Value]
	}{
		{"gap", slices.Delete(slices.Clone(evs), mid, mid+1)},
		{"duplicate", slices.Insert(slices.Clone(evs), mid, evs[mid])},
		{"reordered", func() []store.Event[robustness.Value] {
			e := slices.Clone(evs)
			e[mid], e[mid+1] = e[mid+1], e[mid]
			return e
		}()},
		{"missing tail", evs[:len(evs)-1]},
		{"value of a failed write", forged},
		{"wrong type", func() []store.Event[robustness.Value] {
			e := slices.Clone(evs)
			e[mid].Type = store.EventType(9)
			return e
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := robustness.ValidateWatch(r.Ops, tt.events, r.Start, r.Revision, keys); !errors.Is(err, robustness.ErrWatch) {
				t.Errorf("ValidateWatch = %v, want ErrWatch", err)
			}
		})
	}
}

func TestValidateWatchAmbiguousWrites(t *testing.T) {
	r := smallRun(t)
	keys := robustness.Keys(r.Config.Keys)
	// Forget the lost responses: every ambiguous write may then have
	// happened or not, and the stream still validates.
	blind := slices.Clone(r.Ops)
	var committed, notCommitted int
	for i := range blind {
		if a := blind[i].Actual; a != nil {
			if a.Result == robustness.ResultOK {
				committed++
			} else {
				notCommitted++
			}
			blind[i].Actual = nil
		}
	}
	if committed == 0 {
		t.Fatal("run has no ambiguous write that committed")
	}
	t.Logf("%d ambiguous writes committed, %d did not", committed, notCommitted)
	if err := robustness.ValidateWatch(blind, r.Watch.Events, r.Start, r.Revision, keys); err != nil {
		t.Errorf("with lost responses forgotten: %v", err)
	}
	// With them known, dropping the event of an ambiguous write that
	// committed is a gap the validator names.
	for i, ev := range r.Watch.Events {
		if ev.Type == store.Deleted {
			continue
		}
		for _, op := range r.Ops {
			if op.Actual != nil && op.Actual.Result == robustness.ResultOK && op.Input.Value == ev.Object.Value {
				evs := slices.Delete(slices.Clone(r.Watch.Events), i, i+1)
				if err := robustness.ValidateWatch(r.Ops, evs, r.Start, r.Revision, keys); !errors.Is(err, robustness.ErrWatch) {
					t.Errorf("without the event of a committed ambiguous write: %v, want ErrWatch", err)
				}
				return
			}
		}
	}
	t.Fatal("no event of a committed ambiguous Create or Update in the run")
}

// TestValidateWatchStart checks that the watch is validated after the
// store's start revision: the same run with every revision shifted by one
// validates from revision 1, and the unshifted events do not (revision 1 is
// then before the start).
func TestValidateWatchStart(t *testing.T) {
	r := smallRun(t)
	keys := robustness.Keys(r.Config.Keys)
	if err := robustness.ValidateWatch(r.Ops, r.Watch.Events, r.Start+1, r.Revision, keys); !errors.Is(err, robustness.ErrWatch) {
		t.Errorf("events from revision %d validated after revision %d: %v, want ErrWatch", r.Start+1, r.Start+1, err)
	}
	shift := func(rev int64) int64 {
		if rev == 0 {
			return 0
		}
		return rev + 1
	}
	ops := slices.Clone(r.Ops)
	for i := range ops {
		o := &ops[i]
		o.Input.Rev = shift(o.Input.Rev)
		o.Output.Rev, o.Output.CreateRev = shift(o.Output.Rev), shift(o.Output.CreateRev)
		if o.Actual != nil {
			a := *o.Actual
			a.Rev, a.CreateRev = shift(a.Rev), shift(a.CreateRev)
			o.Actual = &a
		}
	}
	evs := slices.Clone(r.Watch.Events)
	for i := range evs {
		evs[i].Object.Revision = shift(evs[i].Object.Revision)
		evs[i].Object.CreateRevision = shift(evs[i].Object.CreateRevision)
	}
	if err := robustness.ValidateWatch(ops, evs, r.Start+1, r.Revision+1, keys); err != nil {
		t.Errorf("run shifted by one revision: %v", err)
	}
}
