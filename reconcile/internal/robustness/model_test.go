package robustness_test

import (
	"math"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/converge-go/converge/reconcile/internal/robustness"
)

// Short names for hand-written histories.
var (
	v1 = robustness.Value{Client: 1, Seq: 1}
	v2 = robustness.Value{Client: 2, Seq: 1}
)

func create(key int, v robustness.Value) robustness.Input {
	return robustness.Input{Op: robustness.OpCreate, Key: key, Value: v}
}

func update(key int, v robustness.Value, rev int64) robustness.Input {
	return robustness.Input{Op: robustness.OpUpdate, Key: key, Value: v, Rev: rev}
}

func del(key int, rev int64) robustness.Input {
	return robustness.Input{Op: robustness.OpDelete, Key: key, Rev: rev}
}

func get(key int) robustness.Input { return robustness.Input{Op: robustness.OpGet, Key: key} }

func ok(v robustness.Value, rev, created int64) robustness.Output {
	return robustness.Output{Result: robustness.ResultOK, Value: v, Rev: rev, CreateRev: created}
}

func res(r robustness.Result) robustness.Output { return robustness.Output{Result: r} }

func op(client int, call, ret int64, in robustness.Input, out robustness.Output) robustness.Op {
	return robustness.Op{Client: client, Call: call, Return: ret, Input: in, Output: out}
}

// ambiguous is a write whose response was lost: it never returns.
func ambiguous(client int, call int64, in robustness.Input) robustness.Op {
	return op(client, call, math.MaxInt64, in, res(robustness.ResultUnknown))
}

func TestModel(t *testing.T) {
	tests := []struct {
		name  string
		ops   []robustness.Op
		legal bool
	}{
		{"sequential writes and reads", []robustness.Op{
			op(0, 0, 1, create(0, v1), ok(v1, 1, 1)),
			op(0, 2, 3, update(0, v2, 1), ok(v2, 2, 1)),
			op(0, 4, 5, get(0), ok(v2, 2, 1)),
			op(0, 6, 7, del(0, 2), robustness.Output{Result: robustness.ResultOK, Rev: 3}),
			op(0, 8, 9, get(0), res(robustness.ResultNotFound)),
		}, true},
		{"precondition failures", []robustness.Op{
			op(0, 0, 1, create(0, v1), ok(v1, 1, 1)),
			op(0, 2, 3, create(0, v2), res(robustness.ResultExists)),
			op(0, 4, 5, update(0, v2, 7), res(robustness.ResultConflict)),
			op(0, 6, 7, del(1, 1), res(robustness.ResultNotFound)),
		}, true},
		{"concurrent writes in either order", []robustness.Op{
			op(0, 0, 10, create(0, v1), ok(v1, 2, 2)),
			op(1, 1, 9, create(1, v2), ok(v2, 1, 1)),
		}, true},
		{"global revision skips across keys", []robustness.Op{
			op(0, 0, 1, create(0, v1), ok(v1, 1, 1)),
			op(1, 2, 3, create(1, v2), ok(v2, 3, 3)),
		}, false},
		{"two keys claim one revision", []robustness.Op{
			op(0, 0, 10, create(0, v1), ok(v1, 1, 1)),
			op(1, 1, 9, create(1, v2), ok(v2, 1, 1)),
		}, false},
		{"revisions against real-time order", []robustness.Op{
			op(0, 0, 1, create(0, v1), ok(v1, 2, 2)),
			op(1, 2, 3, create(1, v2), ok(v2, 1, 1)),
		}, false},
		{"stale read after a completed write", []robustness.Op{
			op(0, 0, 1, create(0, v1), ok(v1, 1, 1)),
			op(0, 2, 3, update(0, v2, 1), ok(v2, 2, 1)),
			op(1, 4, 5, get(0), ok(v1, 1, 1)),
		}, false},
		{"failed write took effect", []robustness.Op{
			op(0, 0, 1, create(0, v1), res(robustness.ResultFailed)),
			op(1, 2, 3, get(0), ok(v1, 1, 1)),
		}, false},
		{"ambiguous write that happened", []robustness.Op{
			ambiguous(0, 0, create(0, v1)),
			op(1, 2, 3, get(0), ok(v1, 1, 1)),
			op(1, 4, 5, create(1, v2), ok(v2, 2, 2)),
		}, true},
		{"ambiguous write that did not happen", []robustness.Op{
			ambiguous(0, 0, create(0, v1)),
			op(1, 2, 3, get(0), res(robustness.ResultNotFound)),
			op(1, 4, 5, create(1, v2), ok(v2, 1, 1)),
		}, true},
		{"ambiguous write seen, then unseen", []robustness.Op{
			ambiguous(0, 0, create(0, v1)),
			op(1, 2, 3, get(0), ok(v1, 1, 1)),
			op(1, 4, 5, get(0), res(robustness.ResultNotFound)),
		}, false},
		{"ambiguous update that lost its precondition", []robustness.Op{
			op(0, 0, 1, create(0, v1), ok(v1, 1, 1)),
			ambiguous(1, 2, update(0, v2, 9)),
			op(2, 3, 4, get(0), ok(v1, 1, 1)),
		}, true},
		{"unexpected error", []robustness.Op{
			op(0, 0, 1, get(0), robustness.Output{Result: robustness.ResultUnexpected, Err: "store: invalid input"}),
		}, false},
		{"key outside the model", []robustness.Op{
			op(0, 0, 1, get(robustness.MaxKeys), res(robustness.ResultNotFound)),
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := robustness.Check(tt.ops, 0, 0)
			want := porcupine.Illegal
			if tt.legal {
				want = porcupine.Ok
			}
			if got != want {
				t.Errorf("Check = %s, want %s", got, want)
			}
		})
	}
}

// TestModelStart pins the model's start revision: a store whose revision
// was 1 before the history (a new etcd cluster) must number its first write
// 2, and then every write the next revision, as from 0.
func TestModelStart(t *testing.T) {
	tests := []struct {
		name  string
		start int64
		ops   []robustness.Op
		legal bool
	}{
		{"first write after the start", 1, []robustness.Op{
			op(0, 0, 1, create(0, v1), ok(v1, 2, 2)),
			op(1, 2, 3, create(1, v2), ok(v2, 3, 3)),
		}, true},
		{"first write at the start", 1, []robustness.Op{
			op(0, 0, 1, create(0, v1), ok(v1, 1, 1)),
		}, false},
		{"a revision skipped after the start", 1, []robustness.Op{
			op(0, 0, 1, create(0, v1), ok(v1, 2, 2)),
			op(1, 2, 3, create(1, v2), ok(v2, 4, 4)),
		}, false},
		{"a revision skipped before the first write", 0, []robustness.Op{
			op(0, 0, 1, create(0, v1), ok(v1, 2, 2)),
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := robustness.Check(tt.ops, tt.start, 0)
			want := porcupine.Illegal
			if tt.legal {
				want = porcupine.Ok
			}
			if got != want {
				t.Errorf("Check from revision %d = %s, want %s", tt.start, got, want)
			}
		})
	}
}
