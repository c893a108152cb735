package robustness

import (
	"fmt"
	"strings"

	"github.com/anishathalye/porcupine"
)

// State is the model's state: the store revision and, per key slot, the
// object stored there (Rev 0: absent). It is a comparable value of fixed
// size, so porcupine can memoise it cheaply.
type State struct {
	Rev  int64
	Keys [MaxKeys]KeyState
}

// KeyState is one key of State.
type KeyState struct {
	Value     Value
	Rev       int64
	CreateRev int64
}

// Model returns the porcupine model of a store.Store restricted to Get,
// Create, Update and Delete over at most MaxKeys keys, with one global
// revision: every successful write returns exactly the revision after the
// last one, the first the revision after start (the store's revision before
// the history, Report.Start). The history is checked unpartitioned (see the
// package doc).
func Model(start int64) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return State{Rev: start} },
		Step: func(state, input, output any) (bool, any) {
			return Step(state.(State), input.(Input), output.(Output))
		},
		Equal: func(a, b any) bool { return a.(State) == b.(State) },
		Hash:  func(s any) uint64 { return hashState(s.(State)) },
		DescribeOperation: func(input, output any) string {
			return describeOp(input.(Input), output.(Output))
		},
		DescribeState: func(s any) string { return describeState(s.(State)) },
		DescribeOperationMetadata: func(m any) string {
			if o, ok := m.(*Output); ok && o != nil {
				return "store really returned: " + describeOutput(*o)
			}
			return ""
		},
	}
}

// Step reports whether a call with input in could have returned out from
// state s, and the state after it.
//
// A failed call (ResultFailed) leaves the state alone. An ambiguous write
// (ResultUnknown) is applied if its precondition holds in s and otherwise
// leaves the state alone: linearised where its precondition fails (or after
// everything else) it is a write that did not happen.
func Step(s State, in Input, out Output) (bool, State) {
	if in.Key < 0 || in.Key >= MaxKeys {
		return false, s
	}
	switch out.Result {
	case ResultUnexpected:
		return false, s
	case ResultFailed:
		return true, s
	case ResultUnknown:
		if next, ok := apply(s, in); ok {
			return true, next
		}
		return true, s
	}
	k := s.Keys[in.Key]
	if in.Op == OpGet {
		if k.Rev == 0 {
			return out.Result == ResultNotFound, s
		}
		return out.Result == ResultOK && out.Value == k.Value && out.Rev == k.Rev && out.CreateRev == k.CreateRev, s
	}
	if want := precondition(k, in); want != ResultOK {
		return out.Result == want, s
	}
	next, _ := apply(s, in)
	nk := next.Keys[in.Key]
	switch in.Op {
	case OpCreate, OpUpdate:
		return out.Result == ResultOK && out.Rev == next.Rev && out.CreateRev == nk.CreateRev && out.Value == in.Value, next
	default: // OpDelete
		return out.Result == ResultOK && out.Rev == next.Rev, next
	}
}

// precondition returns ResultOK if the write in may apply to key state k,
// else the error result the store must return.
func precondition(k KeyState, in Input) Result {
	switch in.Op {
	case OpCreate:
		if k.Rev != 0 {
			return ResultExists
		}
	case OpUpdate, OpDelete:
		if k.Rev == 0 {
			return ResultNotFound
		}
		if k.Rev != in.Rev {
			return ResultConflict
		}
	default:
		return ResultUnexpected
	}
	return ResultOK
}

// apply applies the write in to s if its precondition holds.
func apply(s State, in Input) (State, bool) {
	k := s.Keys[in.Key]
	if precondition(k, in) != ResultOK {
		return s, false
	}
	s.Rev++
	switch in.Op {
	case OpCreate:
		s.Keys[in.Key] = KeyState{Value: in.Value, Rev: s.Rev, CreateRev: s.Rev}
	case OpUpdate:
		s.Keys[in.Key] = KeyState{Value: in.Value, Rev: s.Rev, CreateRev: k.CreateRev}
	case OpDelete:
		s.Keys[in.Key] = KeyState{}
	}
	return s, true
}

// hashState mixes the state's revisions (which determine it in any
// history of unique values) into 64 bits.
func hashState(s State) uint64 {
	h := uint64(s.Rev) * 0x9e3779b97f4a7c15
	for i, k := range s.Keys {
		h ^= (uint64(k.Rev) + uint64(i)<<56) * 0xbf58476d1ce4e5b9
		h = h<<13 | h>>51
	}
	return h
}

func describeOp(in Input, out Output) string {
	var arg string
	switch in.Op {
	case OpGet:
		arg = fmt.Sprintf("k%d", in.Key)
	case OpCreate:
		arg = fmt.Sprintf("k%d, %v", in.Key, in.Value)
	case OpUpdate:
		arg = fmt.Sprintf("k%d, %v, rev %d", in.Key, in.Value, in.Rev)
	case OpDelete:
		arg = fmt.Sprintf("k%d, rev %d", in.Key, in.Rev)
	}
	return fmt.Sprintf("%v(%s) -> %s", in.Op, arg, describeOutput(out))
}

func describeOutput(out Output) string {
	switch {
	case out.Result == ResultUnexpected:
		return "error: " + out.Err
	case out.Result != ResultOK:
		return out.Result.String()
	case out.CreateRev == 0:
		return fmt.Sprintf("rev %d", out.Rev)
	}
	return fmt.Sprintf("%v rev %d (created %d)", out.Value, out.Rev, out.CreateRev)
}

func describeState(s State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rev %d", s.Rev)
	for i, k := range s.Keys {
		if k.Rev != 0 {
			fmt.Fprintf(&b, ", k%d=%v@%d", i, k.Value, k.Rev)
		}
	}
	return b.String()
}
