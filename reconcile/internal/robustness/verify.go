package robustness

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// checkGrace bounds CheckCompaction, so that a watch that never delivers
// fails the test instead of hanging it.
const checkGrace = time.Minute

// Stats counts what a report holds.
type Stats struct {
	Ops, Writes, Failed, Ambiguous, Events, Disconnects, Resumes int
	// AmbiguousCommitted counts the ambiguous writes whose lost response
	// says they took effect, AmbiguousNotCommitted those whose lost
	// response says they did not (refused, or never sent to the store).
	AmbiguousCommitted, AmbiguousNotCommitted int
	// FailedWrites counts the writes that failed before they reached the
	// store: recorded as failed, or ambiguous with that outcome known
	// (Op.Actual).
	FailedWrites int
	// Known counts the ambiguous writes whose outcome the store side knew
	// (Op.Known), which Resolve replaces by that outcome before the check;
	// Ambiguous-Known stay ambiguous in the check.
	Known int
	// Overlapping counts the operations whose call overlaps another
	// client's: a measure of how concurrent the run was.
	Overlapping int
}

// Count returns the report's Stats.
func (r *Report) Count() Stats {
	s := Stats{Ops: len(r.Ops), Events: len(r.Watch.Events), Disconnects: r.Watch.Disconnects, Resumes: r.Watch.Resumes}
	s.Overlapping = overlapping(r.Ops)
	for _, op := range r.Ops {
		if op.Input.Op.IsWrite() {
			s.Writes++
		}
		switch op.Output.Result {
		case ResultFailed:
			s.Failed++
		case ResultUnknown:
			s.Ambiguous++
			if op.Known {
				s.Known++
			}
		}
		s.countWrite(op)
	}
	return s
}

// countWrite counts op in the Stats that describe writes.
func (s *Stats) countWrite(op Op) {
	if !op.Input.Op.IsWrite() {
		return
	}
	actual := op.Output.Result
	if actual == ResultUnknown {
		if op.Actual == nil {
			return
		}
		actual = op.Actual.Result
		if actual == ResultOK {
			s.AmbiguousCommitted++
		} else {
			s.AmbiguousNotCommitted++
		}
	}
	if actual == ResultFailed {
		s.FailedWrites++
	}
}

// Verify records a run of cfg on backend b and checks it: the history is
// linearizable (on failure the test reports the path of porcupine's
// visualisation), the watch stream passes ValidateWatch, and, if the store
// can compact, CheckCompaction holds. Failures are reported through t.
func Verify(ctx context.Context, t testing.TB, b Backend, cfg Config) *Report {
	t.Helper()
	r, err := Record(ctx, t, b, cfg)
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	s := r.Count()
	t.Logf("%s seed %d: %d ops (%d overlapping another client's, %d writes, %d failed, %d writes known to have failed before commit, %d ambiguous of which %d committed, %d did not and %d were resolved by the store side's answer), %d watch events, %d disconnects, %d resumes, restarted %v, disrupted %v, revisions %d to %d",
		b.Name, cfg.Seed, s.Ops, s.Overlapping, s.Writes, s.Failed, s.FailedWrites, s.Ambiguous, s.AmbiguousCommitted, s.AmbiguousNotCommitted, s.Known, s.Events, s.Disconnects, s.Resumes, r.Restarted, r.Disrupted, r.Start, r.Revision)
	CheckLinearizable(t, r)
	if err := ValidateWatch(r.Ops, r.Watch.Events, r.Start, r.Revision, Keys(cfg.Keys)); err != nil {
		t.Errorf("watch: %v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, checkGrace)
	defer cancel()
	switch err := CheckCompaction(cctx, r.Store, r.Watch.Events, r.Revision); {
	case errors.Is(err, errors.ErrUnsupported):
		t.Logf("%s: compaction not checked: %v", b.Name, err)
	case err != nil:
		t.Errorf("compaction: %v", err)
	}
	return r
}

// CheckLinearizable checks the report's history and fails t unless it is
// linearizable, giving the path of porcupine's visualisation.
func CheckLinearizable(t testing.TB, r *Report) {
	t.Helper()
	start := time.Now()
	res, info := Check(r.Ops, r.Start, r.Config.CheckTimeout)
	took := time.Since(start)
	t.Logf("%s seed %d: linearizability checked in %v: %s", r.Backend, r.Config.Seed, took.Round(time.Millisecond), res)
	switch res {
	case porcupine.Ok:
		return
	case porcupine.Unknown:
		t.Errorf("%s seed %d: the linearizability check did not finish within %v", r.Backend, r.Config.Seed, r.Config.CheckTimeout)
		return
	}
	path, err := Visualize(info, r.Start, r.Backend)
	if err != nil {
		t.Errorf("%s seed %d: history is %s; %v", r.Backend, r.Config.Seed, res, err)
		return
	}
	t.Errorf("%s seed %d: history is %s; visualisation: %s", r.Backend, r.Config.Seed, res, path)
}

// overlapping counts the operations whose interval overlaps that of an
// operation of another client. Ambiguous operations, which never return, are
// left out: they would overlap everything after them.
func overlapping(ops []Op) int {
	var sorted []Op
	for _, op := range ops {
		if op.Return != math.MaxInt64 {
			sorted = append(sorted, op)
		}
	}
	slices.SortFunc(sorted, func(a, b Op) int { return cmp.Compare(a.Call, b.Call) })
	over := make([]bool, len(sorted))
	for i, a := range sorted {
		for j := i + 1; j < len(sorted) && sorted[j].Call <= a.Return; j++ {
			if sorted[j].Client != a.Client {
				over[i], over[j] = true, true
			}
		}
	}
	n := 0
	for _, o := range over {
		if o {
			n++
		}
	}
	return n
}
