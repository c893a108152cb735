package robustness

// Resolve returns the history the linearizability check judges: ops with
// every ambiguous write whose outcome the system under test knew
// (Op.Known: the store answered, and only the transport lost the answer)
// replaced by that outcome, as etcd's robustness tests patch their
// histories with what the server reports.
//
//   - A write the store refused before it reached it (ResultFailed) is
//     left out: it had no effect, so no linearization needs it.
//   - Any other answer (success, or a failed precondition) becomes a
//     completed operation with that output, returning at Op.Ended (when the
//     client saw it fail, or the store side answered, whichever is later):
//     the store answered between the call and then.
//
// Ambiguous writes that are not Known stay ambiguous (they never return and
// may or may not have taken effect). Every other operation is kept as it
// is. Resolving shrinks the search that porcupine does, which grows
// exponentially with the number of ambiguous writes pending at once: a run
// over HTTP that drops connections would otherwise leave hundreds of them.
// ops is not modified.
func Resolve(ops []Op) []Op {
	out := make([]Op, 0, len(ops))
	for _, op := range ops {
		if op.Output.Result != ResultUnknown || !op.Known || op.Actual == nil {
			out = append(out, op)
			continue
		}
		switch op.Actual.Result {
		case ResultFailed:
			continue
		case ResultOK, ResultNotFound, ResultExists, ResultConflict:
			op.Output, op.Return = *op.Actual, op.Ended
		}
		out = append(out, op)
	}
	return out
}
