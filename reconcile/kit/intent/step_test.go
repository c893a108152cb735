package intent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/intent"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// stepRow is a row of Step's decision table. IDs are named: "old" is
// attempt 1 of generation 1, "cur1" and "cur2" attempts 1 and 2 of the
// object's generation 2.
type stepRow struct {
	name string
	rec  string       // "none", or KIND-ID: pending-old, done-cur1-fail, ...
	seen intent.State // what the world says of the attempt looked for (the recorded one if pending, else the new one)
	// leaves is what Act leaves the attempt in.
	leaves intent.State
	// What Step must do: its decisions, the act it makes (if any), the
	// record it leaves, and whether the attempt runs on or another is due.
	decisions     []intent.Decision
	acted         string
	want          string
	done          bool
	result        string
	running, next bool
}

var (
	beginAct   = []intent.Decision{intent.Begin, intent.Act}
	beginAdopt = []intent.Decision{intent.Begin, intent.Adopt}
	beginJudge = []intent.Decision{intent.Begin, intent.Judge}
	act        = []intent.Decision{intent.Act}
	adopt      = []intent.Decision{intent.Adopt}
	judge      = []intent.Decision{intent.Judge}
	done       = []intent.Decision{intent.Done}
	absent     = intent.Absent
	running    = intent.Running
	finished   = intent.Finished
)

var stepTable = []stepRow{
	{name: "no record, world has nothing: begin and act", rec: "none", seen: absent, leaves: finished, decisions: beginAct, acted: "cur1", want: "cur1", done: true, result: "ok"},
	{name: "no record, act starts something that runs on", rec: "none", seen: absent, leaves: running, decisions: beginAct, acted: "cur1", want: "cur1", running: true},
	{name: "no record, world runs the new ID: adopt", rec: "none", seen: running, decisions: beginAdopt, want: "cur1", running: true},
	{name: "no record, world finished the new ID (record lost): judge", rec: "none", seen: finished, decisions: beginJudge, want: "cur1", done: true, result: "world"},
	{name: "pending, never started: act under its ID", rec: "pending-cur1", seen: absent, leaves: finished, decisions: act, acted: "cur1", want: "cur1", done: true, result: "ok"},
	{name: "pending, running: adopt", rec: "pending-cur1", seen: running, decisions: adopt, want: "cur1", running: true},
	{name: "pending, finished: judge", rec: "pending-cur1", seen: finished, decisions: judge, want: "cur1", done: true, result: "world"},
	{name: "pending of an older generation, never started: act, then the new one is next", rec: "pending-old", seen: absent, leaves: finished, decisions: act, acted: "old", want: "old", done: true, result: "ok", next: true},
	{name: "pending of an older generation, running: adopt", rec: "pending-old", seen: running, decisions: adopt, want: "old", running: true},
	{name: "pending of an older generation, finished: judge, then the new one is next", rec: "pending-old", seen: finished, decisions: judge, want: "old", done: true, result: "world", next: true},
	{name: "done for this generation: nothing", rec: "done-cur1-ok", decisions: done, want: "cur1", done: true, result: "ok"},
	{name: "done and failed, again wanted: attempt 2", rec: "done-cur1-fail", seen: absent, leaves: finished, decisions: beginAct, acted: "cur2", want: "cur2", done: true, result: "ok"},
	{name: "done and failed, attempt 2 already running: adopt", rec: "done-cur1-fail", seen: running, decisions: beginAdopt, want: "cur2", running: true},
	{name: "done and failed, attempt 2 already finished: judge", rec: "done-cur1-fail", seen: finished, decisions: beginJudge, want: "cur2", done: true, result: "world"},
	{name: "done for an older generation: begin this one's", rec: "done-old-ok", seen: absent, leaves: finished, decisions: beginAct, acted: "cur1", want: "cur1", done: true, result: "ok"},
	{name: "done for an older generation, this one's running: adopt", rec: "done-old-ok", seen: running, decisions: beginAdopt, want: "cur1", running: true},
	{name: "done for an older generation, this one's finished: judge", rec: "done-old-ok", seen: finished, decisions: beginJudge, want: "cur1", done: true, result: "world"},
}

// TestStepCarriesOutTheDecisionTable runs Step once for each kind of
// record against each state the world can report of the attempt it
// looks for, and checks what it decided, what it acted on (nothing but
// the expected attempt, and that only with its intent in the store), the
// record it left and what it says comes next.
func TestStepCarriesOutTheDecisionTable(t *testing.T) {
	for _, row := range stepTable {
		t.Run(row.name, func(t *testing.T) {
			s := store.NewMemory[*task]()
			obj := newTask(t, s, "tasks/a", 2, intent.Record[string]{})
			ids := map[string]string{
				"old":  intent.ID("tasks/a", obj.CreateRevision, 1, 1),
				"cur1": intent.ID("tasks/a", obj.CreateRevision, 2, 1),
				"cur2": intent.ID("tasks/a", obj.CreateRevision, 2, 2),
			}
			rec := recordOf(row.rec, ids)
			if row.rec != "none" {
				var err error
				obj, err = resource.WriteStatus(t.Context(), s, obj, taskStatus{Run: rec})
				require.NoError(t, err)
			}
			w := newWorld()
			w.leaves = row.leaves
			lookedFor := ids[row.want]
			if rec.Pending() {
				lookedFor = rec.ID
			}
			if row.seen != absent {
				w.set(lookedFor, intent.Found[string]{State: row.seen, Result: "world"})
			}
			w.beforeAct = func(id string) {
				got := stored(t, s, "tasks/a")
				require.True(t, got.Pending() && got.ID == id, "acted under %s with %+v in the store", id, got)
			}
			o := once(w)
			out, err := o.Step(t.Context(), s, obj)
			require.NoError(t, err)
			require.Equal(t, row.decisions, out.Decisions)
			var wantActs []string
			if row.acted != "" {
				wantActs = []string{ids[row.acted]}
			}
			require.Equal(t, wantActs, w.actsMade())
			got := stored(t, s, "tasks/a")
			require.Equal(t, got, out.Record)
			require.Equal(t, ids[row.want], got.ID)
			require.Equal(t, row.done, got.Done)
			require.Equal(t, row.result, got.Result)
			require.Equal(t, row.running, out.Running)
			require.Equal(t, row.next, out.Next)
			require.Equal(t, !row.running && !row.next, out.Settled())
		})
	}
}

// recordOf is the record a row names: "none", or KIND-ID[-RESULT].
func recordOf(name string, ids map[string]string) intent.Record[string] {
	recs := map[string]intent.Record[string]{
		"none":           {},
		"pending-old":    {ID: ids["old"], Generation: 1, Attempt: 1},
		"pending-cur1":   {ID: ids["cur1"], Generation: 2, Attempt: 1},
		"done-cur1-ok":   {ID: ids["cur1"], Generation: 2, Attempt: 1, Done: true, Result: "ok"},
		"done-cur1-fail": {ID: ids["cur1"], Generation: 2, Attempt: 1, Done: true, Result: "fail"},
		"done-old-ok":    {ID: ids["old"], Generation: 1, Attempt: 1, Done: true, Result: "ok"},
	}
	rec, ok := recs[name]
	if !ok {
		panic("no record named " + name)
	}
	return rec
}

// TestStepActsOnNothingWhenItsIntentCannotBeWritten: an intent whose
// compare-and-swap fails (the object changed since it was read) is not
// acted on, and nothing is recorded.
func TestStepActsOnNothingWhenItsIntentCannotBeWritten(t *testing.T) {
	s := store.NewMemory[*task]()
	stale := newTask(t, s, "tasks/a", 1, intent.Record[string]{})
	_, err := resource.PutSpec(t.Context(), s, "tasks/a", taskSpec{N: 9})
	require.NoError(t, err)
	w := newWorld()
	o := once(w)
	_, err = o.Step(t.Context(), s, stale)
	require.ErrorIs(t, err, store.ErrConflict)
	require.Empty(t, w.actsMade())
	require.Zero(t, stored(t, s, "tasks/a"))
}

// TestAFailedLookOrActLeavesTheIntentPendingAndTheNextStepSettlesIt: a
// Find that fails acts on nothing; an Act that fails, or whose result
// cannot be recorded, leaves the intent pending; the next Step asks the
// world and judges the attempt by the result the world kept, without
// acting again.
func TestAFailedLookOrActLeavesTheIntentPendingAndTheNextStepSettlesIt(t *testing.T) {
	s := store.NewMemory[*task]()
	obj := newTask(t, s, "tasks/a", 1, intent.Record[string]{})
	w := newWorld()
	o := once(w)
	down := errors.New("the world cannot be reached")

	find := o.Find
	o.Find = func(context.Context, string) (intent.Found[string], error) { return intent.Found[string]{}, down }
	out, err := o.Step(t.Context(), s, obj)
	require.ErrorIs(t, err, down)
	require.Equal(t, []intent.Decision{intent.Begin}, out.Decisions)
	require.True(t, stored(t, s, "tasks/a").Pending())
	require.Empty(t, w.actsMade())
	o.Find = find

	// The result write fails after the act: the world keeps the result.
	write := o.Write
	o.Write = func(ctx context.Context, s store.Store[*task], obj store.Object[*task], rec intent.Record[string]) (store.Object[*task], error) {
		if rec.Done {
			return store.Object[*task]{}, store.ErrUnavailable
		}
		return write(ctx, s, obj, rec)
	}
	out, err = o.Step(t.Context(), s, out.Object)
	require.ErrorIs(t, err, store.ErrUnavailable)
	require.Equal(t, []intent.Decision{intent.Act}, out.Decisions)
	require.Len(t, w.actsMade(), 1)
	o.Write = write

	out, err = o.Step(t.Context(), s, out.Object)
	require.NoError(t, err)
	require.Equal(t, []intent.Decision{intent.Judge}, out.Decisions)
	require.Len(t, w.actsMade(), 1, "acted again")
	require.Equal(t, "ok", stored(t, s, "tasks/a").Result)
}

// TestRetriesArePacedOneAttemptPerStep: a failing attempt with retries
// left ends the Step with Next; each following Step makes one more
// attempt, under the next ID, until Again says no more.
func TestRetriesArePacedOneAttemptPerStep(t *testing.T) {
	s := store.NewMemory[*task]()
	obj := newTask(t, s, "tasks/a", 1, intent.Record[string]{})
	w := newWorld()
	w.result = "fail"
	o := once(w)
	for attempt := 1; attempt <= 3; attempt++ {
		out, err := o.Step(t.Context(), s, obj)
		require.NoError(t, err)
		require.Len(t, w.actsMade(), attempt)
		require.Equal(t, attempt, out.Record.Attempt)
		require.Equal(t, attempt < 3, out.Next, "attempt %d", attempt)
		obj = out.Object
	}
	out, err := o.Step(t.Context(), s, obj)
	require.NoError(t, err)
	require.Equal(t, []intent.Decision{intent.Done}, out.Decisions)
	require.Len(t, w.actsMade(), 3)
}

// TestStepRefusesBadInputWithErrInvalid: a Once with a function missing,
// an object without a value or revision, a world answering with a state
// it cannot be in, and a Write that does not store the record are refused
// with an error matching store.ErrInvalid, never a panic, and nothing is
// acted on.
func TestStepRefusesBadInputWithErrInvalid(t *testing.T) {
	type runner = intent.Once[*task, string]
	type object = store.Object[*task]
	s := store.NewMemory[*task]()
	w := newWorld()
	bad := map[string]func(o *runner, obj object) object{
		"no Find":       func(o *runner, obj object) object { o.Find = nil; return obj },
		"no Act":        func(o *runner, obj object) object { o.Act = nil; return obj },
		"no Write":      func(o *runner, obj object) object { o.Write = nil; return obj },
		"no Record":     func(o *runner, obj object) object { o.Record = nil; return obj },
		"no Generation": func(o *runner, obj object) object { o.Generation = nil; return obj },
		"nil value":     func(_ *runner, obj object) object { return object{Key: obj.Key, Revision: obj.Revision} },
		"no revision":   func(_ *runner, obj object) object { obj.Revision = 0; return obj },
		"Find says 7":   func(o *runner, obj object) object { o.Find = says(7); return obj },
		"Act says 7":    func(o *runner, obj object) object { o.Act = says(7); return obj },
		"Act says Absent": func(o *runner, obj object) object {
			o.Act = says(intent.Absent)
			return obj
		},
		"a Write that loses the record": func(o *runner, obj object) object {
			o.Write = func(context.Context, store.Store[*task], object, intent.Record[string]) (object, error) {
				return obj, nil
			}
			return obj
		},
	}
	for name, change := range bad {
		o := once(w)
		in := change(&o, newTask(t, s, "tasks/"+name, 1, intent.Record[string]{}))
		_, err := o.Step(t.Context(), s, in)
		require.ErrorIs(t, err, store.ErrInvalid, name)
	}
	require.Empty(t, w.actsMade())
}

// says returns a Find or Act that reports state.
func says(state intent.State) func(context.Context, string) (intent.Found[string], error) {
	return func(context.Context, string) (intent.Found[string], error) {
		return intent.Found[string]{State: state}, nil
	}
}
