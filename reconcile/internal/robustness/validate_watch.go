package robustness

import (
	"errors"
	"fmt"

	"github.com/converge-go/converge/store"
)

// maxWatchProblems caps the problems ValidateWatch lists.
const maxWatchProblems = 20

// ValidateWatch checks the events a watcher received during a run (all keys
// of the run's store, after revision start, across reconnections) against
// the recorded history and the store's revisions before and after the run
// (Report.Start and Report.Revision). The store must have been written only
// by the recorded clients. It checks that the events are:
//
//   - ordered and unique: revisions strictly increase;
//   - complete: they cover every revision from start+1 to final, so no
//     change was missed across reconnections;
//   - a valid change log: replayed in order, each Created finds its key
//     absent, each Updated and Deleted finds it present, and revisions,
//     create revisions and deleted values agree with the replay;
//   - reliable: every write that succeeded appears, with the key, value,
//     type and revisions it returned; so does every ambiguous write whose
//     lost response (Op.Actual) says it succeeded;
//   - truthful: every event is the effect of a recorded write that succeeded
//     or was ambiguous; a write that failed, or whose lost response says it
//     failed, never appears.
//
// The error matches ErrWatch and lists the first problems found.
func ValidateWatch(ops []Op, events []store.Event[Value], start, final int64, keys []string) error {
	v := newWatchValidator(ops, keys)
	v.check(events, start, final)
	if len(v.problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w (%d events, final revision %d):\n%w", ErrWatch, len(events), final, errors.Join(v.problems...))
}

type watchValidator struct {
	ops       []Op
	keys      map[string]int
	byValue   map[Value]int // Create and Update ops by the value they write
	byRev     map[int64]int // writes known to have committed, by revision
	committed []int         // writes known to have committed, in history order
	deletes   map[int][]int // ambiguous deletes with unknown outcome, by key
	matched   map[int]bool  // ops matched to an event
	problems  []error
	dropped   int
}

func newWatchValidator(ops []Op, keys []string) *watchValidator {
	v := &watchValidator{
		ops:     ops,
		keys:    make(map[string]int, len(keys)),
		byValue: make(map[Value]int),
		byRev:   make(map[int64]int),
		deletes: make(map[int][]int),
		matched: make(map[int]bool),
	}
	for i, k := range keys {
		v.keys[k] = i
	}
	for i, op := range ops {
		if !op.Input.Op.IsWrite() {
			continue
		}
		if op.Input.Op != OpDelete {
			v.byValue[op.Input.Value] = i
		}
		if out, ok := outcome(op); ok && out.Result == ResultOK {
			if j, dup := v.byRev[out.Rev]; dup {
				v.problem("%v by client %d and %v by client %d both committed at revision %d", ops[j].Input.Op, ops[j].Client, op.Input.Op, op.Client, out.Rev)
			}
			v.byRev[out.Rev] = i
			v.committed = append(v.committed, i)
		} else if !ok && op.Input.Op == OpDelete {
			v.deletes[op.Input.Key] = append(v.deletes[op.Input.Key], i)
		}
	}
	return v
}

// outcome returns what op really returned, and false if that is unknown.
func outcome(op Op) (Output, bool) {
	switch {
	case op.Output.Result != ResultUnknown:
		return op.Output, true
	case op.Actual != nil:
		return *op.Actual, true
	}
	return Output{}, false
}

func (v *watchValidator) problem(format string, args ...any) {
	if len(v.problems) >= maxWatchProblems {
		v.dropped++
		return
	}
	v.problems = append(v.problems, fmt.Errorf(format, args...))
}

func (v *watchValidator) check(events []store.Event[Value], start, final int64) {
	replay := make(map[string]store.Object[Value])
	last := start
	for _, ev := range events {
		rev := ev.Object.Revision
		if rev <= last {
			v.problem("event %v %q at revision %d after revision %d: out of order or repeated", ev.Type, ev.Object.Key, rev, last)
			continue
		}
		if rev != last+1 {
			v.problem("revisions %d to %d missing from the watch", last+1, rev-1)
		}
		last = rev
		v.event(ev, replay)
	}
	if last < final {
		v.problem("revisions %d to %d missing at the end of the watch", last+1, final)
	}
	if last > final {
		v.problem("watch reached revision %d beyond the final revision %d", last, final)
	}
	for _, i := range v.committed {
		if !v.matched[i] {
			op := v.ops[i]
			out, _ := outcome(op)
			v.problem("%v of %q at revision %d (client %d) committed but never appeared in the watch", op.Input.Op, v.keyName(op.Input.Key), out.Rev, op.Client)
		}
	}
	if v.dropped > 0 {
		v.problems = append(v.problems, fmt.Errorf("and %d more problems", v.dropped))
	}
}

func (v *watchValidator) keyName(i int) string {
	for k, j := range v.keys {
		if j == i {
			return k
		}
	}
	return fmt.Sprintf("key#%d", i)
}

// event checks one in-order event against the replay and the history, and
// applies it to the replay.
func (v *watchValidator) event(ev store.Event[Value], replay map[string]store.Object[Value]) {
	obj := ev.Object
	prev, existed := replay[obj.Key]
	switch ev.Type {
	case store.Created:
		if existed {
			v.problem("Created %q at revision %d, but it exists since revision %d", obj.Key, obj.Revision, prev.Revision)
		}
		if obj.CreateRevision != obj.Revision {
			v.problem("Created %q at revision %d with create revision %d", obj.Key, obj.Revision, obj.CreateRevision)
		}
		replay[obj.Key] = obj
	case store.Updated, store.Deleted:
		if !existed {
			v.problem("%v %q at revision %d, but it does not exist", ev.Type, obj.Key, obj.Revision)
		} else if obj.CreateRevision != prev.CreateRevision {
			v.problem("%v %q at revision %d with create revision %d, want %d", ev.Type, obj.Key, obj.Revision, obj.CreateRevision, prev.CreateRevision)
		}
		if ev.Type == store.Deleted {
			if existed && obj.Value != prev.Value {
				v.problem("Deleted %q at revision %d carries value %v, last value was %v", obj.Key, obj.Revision, obj.Value, prev.Value)
			}
			delete(replay, obj.Key)
		} else {
			replay[obj.Key] = obj
		}
	default:
		v.problem("event of unknown type %v at revision %d", ev.Type, obj.Revision)
		return
	}
	i, ok := v.writeOf(ev, prev.Revision)
	if !ok {
		v.problem("%v %q at revision %d (value %v) matches no write that succeeded or may have", ev.Type, obj.Key, obj.Revision, obj.Value)
		return
	}
	v.matched[i] = true
	v.agrees(ev, v.ops[i])
}

// writeOf finds the recorded write an event records; prevRev is the key's
// revision before the event, in the replay.
func (v *watchValidator) writeOf(ev store.Event[Value], prevRev int64) (int, bool) {
	if i, ok := v.byRev[ev.Object.Revision]; ok {
		return i, !v.matched[i]
	}
	if ev.Type != store.Deleted {
		i, ok := v.byValue[ev.Object.Value]
		if !ok || v.matched[i] {
			return 0, false
		}
		_, known := outcome(v.ops[i])
		return i, !known
	}
	// A delete with unknown outcome on this key that expected the revision
	// the key had.
	k, ok := v.keys[ev.Object.Key]
	if !ok {
		return 0, false
	}
	for _, i := range v.deletes[k] {
		if !v.matched[i] && v.ops[i].Input.Rev == prevRev {
			return i, true
		}
	}
	return 0, false
}

// agrees checks that the event is what the write op asked for.
func (v *watchValidator) agrees(ev store.Event[Value], op Op) {
	in, obj := op.Input, ev.Object
	want := map[OpKind]store.EventType{OpCreate: store.Created, OpUpdate: store.Updated, OpDelete: store.Deleted}[in.Op]
	if ev.Type != want {
		v.problem("revision %d is %v in the watch but %v in the history", obj.Revision, ev.Type, in.Op)
	}
	if k, ok := v.keys[obj.Key]; !ok || k != in.Key {
		v.problem("revision %d changed %q in the watch but %q in the history", obj.Revision, obj.Key, v.keyName(in.Key))
	}
	if in.Op != OpDelete && obj.Value != in.Value {
		v.problem("revision %d wrote %v in the watch but %v in the history", obj.Revision, obj.Value, in.Value)
	}
	if out, ok := outcome(op); ok && out.Rev != obj.Revision {
		v.problem("%v of %v returned revision %d but the watch has it at %d", in.Op, in.Value, out.Rev, obj.Revision)
	}
}
