package intent

// Decision is what a reconcile does with an object's intent record.
type Decision int

// The decisions, as Decide takes them.
const (
	// Done: the attempt of the object's generation has its result
	// recorded, and no other attempt is wanted. Nothing to do.
	Done Decision = iota
	// Begin: no attempt is recorded for the object's generation (none
	// ever, or the last one was for an older generation), or the last
	// one finished and another is wanted: record the intent of a new
	// attempt, under a new ID, before anything else.
	Begin
	// Act: the recorded attempt never started (the world has nothing of
	// it): act under the recorded ID.
	Act
	// Adopt: the recorded attempt runs (the world has it running under
	// its ID): it is the same attempt; do not act, look again later.
	Adopt
	// Judge: the recorded attempt finished (the world has its result):
	// record the result; do not act.
	Judge
)

func (d Decision) String() string {
	switch d {
	case Done:
		return "Done"
	case Begin:
		return "Begin"
	case Act:
		return "Act"
	case Adopt:
		return "Adopt"
	case Judge:
		return "Judge"
	}
	return "Decision(?)"
}

// State is what the world says of an attempt, found by its ID.
type State int

// The states of an attempt in the world.
const (
	// Absent: nothing of the attempt: it never started.
	Absent State = iota
	// Running: the attempt runs.
	Running
	// Finished: the attempt ended, and the world kept its result.
	Finished
)

func (s State) String() string {
	switch s {
	case Absent:
		return "Absent"
	case Running:
		return "Running"
	case Finished:
		return "Finished"
	}
	return "State(?)"
}

// Decide is the pattern's decision, a pure function of an object's record,
// the generation its spec is at, whether another attempt is wanted after
// the record's finished one (again: see Once.Again), and what the world
// says of the recorded attempt (found; read only for a pending record,
// the one case where the world decides):
//
//	record                            decision
//	none                              Begin
//	pending, found Absent             Act
//	pending, found Running            Adopt
//	pending, found Finished           Judge
//	done, for an older generation     Begin
//	done, for this generation, again  Begin
//	done, for this generation         Done
//
// A pending record is settled before anything else, whatever its
// generation: at most one attempt of an object is in flight. A State
// other than Absent and Finished is taken as Running: Decide acts only
// on a definite Absent.
func Decide[R any](rec Record[R], generation int64, again bool, found State) Decision {
	switch {
	case rec.ID == "":
		return Begin
	case !rec.Done:
		switch found {
		case Absent:
			return Act
		case Finished:
			return Judge
		}
		return Adopt
	case rec.Generation != generation, again:
		return Begin
	}
	return Done
}
