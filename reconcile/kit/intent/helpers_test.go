package intent_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/intent"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// The stored type of these tests: a task whose status holds the record of
// its run, whose result is "ok" or "fail".
type (
	taskSpec   struct{ N int }
	taskStatus struct {
		Run intent.Record[string] `json:"run"`
	}
	task = resource.Resource[taskSpec, taskStatus]
)

func runField(st *taskStatus) *intent.Record[string] { return &st.Run }

// world is a fake world: attempts by ID with their state and result, the
// acts made, and what Act leaves an attempt in.
type world struct {
	mu     sync.Mutex
	found  map[string]intent.Found[string]
	acts   []string
	leaves intent.State // what Act leaves: Finished (the zero: Absent, read as Finished) or Running
	result string       // what an act results in ("ok" if empty)
	// beforeAct, if set, runs inside Act before anything else.
	beforeAct func(id string)
}

func newWorld() *world { return &world{found: map[string]intent.Found[string]{}} }

func (w *world) Find(_ context.Context, id string) (intent.Found[string], error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.found[id], nil
}

func (w *world) Act(_ context.Context, id string) (intent.Found[string], error) {
	if w.beforeAct != nil {
		w.beforeAct(id)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.acts = append(w.acts, id)
	f := intent.Found[string]{State: intent.Finished, Result: w.result}
	if f.Result == "" {
		f.Result = "ok"
	}
	if w.leaves == intent.Running {
		f = intent.Found[string]{State: intent.Running}
	}
	w.found[id] = f
	return f, nil
}

func (w *world) set(id string, f intent.Found[string]) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.found[id] = f
}

func (w *world) actsMade() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.acts...)
}

// once returns the Once of these tests over w: a failed result is tried
// again, up to 3 attempts.
func once(w *world) intent.Once[*task, string] {
	o := intent.ForResource[taskSpec](runField)
	o.Find, o.Act = w.Find, w.Act
	o.Again = func(last intent.Record[string]) bool { return last.Result == "fail" && last.Attempt < 3 }
	return o
}

// newTask creates key at generation gens (written gens times) holding rec,
// and returns it as stored.
func newTask(t *testing.T, s store.Store[*task], key string, gens int, rec intent.Record[string]) store.Object[*task] {
	t.Helper()
	var obj store.Object[*task]
	var err error
	for n := range gens {
		obj, err = resource.PutSpec(t.Context(), s, key, taskSpec{N: n})
		require.NoError(t, err)
	}
	if rec != (intent.Record[string]{}) {
		obj, err = resource.WriteStatus(t.Context(), s, obj, taskStatus{Run: rec})
		require.NoError(t, err)
	}
	return obj
}

// stored returns key's record as stored.
func stored(t *testing.T, s store.Store[*task], key string) intent.Record[string] {
	t.Helper()
	obj, err := s.Get(t.Context(), key)
	require.NoError(t, err)
	return obj.Value.Status.Run
}
