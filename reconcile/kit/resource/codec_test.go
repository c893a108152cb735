package resource_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// jobSpec and jobStatus hold what JSON does not keep exactly: numbers in a
// map[string]any read back as float64, and strings may hold raw process
// output that is not valid UTF-8.
type jobSpec struct {
	Command string
	Env     map[string]any
}

type jobStatus struct {
	Output  string
	Metrics map[string]any
}

type job = resource.Resource[jobSpec, jobStatus]

// opaqueStore hides the codec of the store it wraps: it is a codec-backed
// store that does not implement store.Encoded, as a third-party store may
// not (the helpers then judge it with JSON).
type opaqueStore struct{ store.Store[*job] }

// jobStores returns a fresh store of each kind the helpers tell apart.
func jobStores() map[string]func() store.Store[*job] {
	return map[string]func() store.Store[*job]{
		"View":                    func() store.Store[*job] { return store.NewView[*job](store.NewMemory[[]byte](), nil) },
		"codec-backed, not named": func() store.Store[*job] { return opaqueStore{store.NewView[*job](store.NewMemory[[]byte](), nil)} },
		"Memory":                  func() store.Store[*job] { return store.NewMemory[*job]() },
	}
}

func codecBacked(name string) bool { return name != "Memory" }

func jobRevision(t *testing.T, s store.Store[*job]) int64 {
	t.Helper()
	rev, err := s.Revision(t.Context())
	require.NoError(t, err)
	return rev
}

// encodes asserts that got and want have the same JSON encoding: what a
// codec-backed store promises to give back.
func encodes(t *testing.T, want, got any) {
	t.Helper()
	w, err := json.Marshal(want)
	require.NoError(t, err)
	g, err := json.Marshal(got)
	require.NoError(t, err)
	assert.Equal(t, string(w), string(g))
}

func TestWriteStatusThatTheCodecDoesNotKeepExactlySettlesInOneWrite(t *testing.T) {
	status := jobStatus{Output: "ok", Metrics: map[string]any{
		"restarts": 3, "load": 0.5, "peak": int64(1) << 40,
		"nested": map[string]any{"ports": []any{80, 443}},
	}}
	for name, newStore := range jobStores() {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			s := newStore()
			_, err := resource.PutSpec(ctx, s, "jobs/a", jobSpec{Command: "run"})
			require.NoError(t, err)
			before := jobRevision(t, s)
			// Reconcile after reconcile, as a controller does: read, then
			// record the same observation.
			for range 5 {
				obj, err := s.Get(ctx, "jobs/a")
				require.NoError(t, err)
				_, err = resource.WriteStatus(ctx, s, obj, status)
				require.NoError(t, err)
			}
			assert.Equal(t, before+1, jobRevision(t, s), "the same status must be written exactly once")
			got, err := s.Get(ctx, "jobs/a")
			require.NoError(t, err)
			encodes(t, status, got.Value.Status)
			assert.Equal(t, got.Value.Generation, got.Value.ObservedGeneration)
		})
	}
}

func TestPutSpecThatTheCodecDoesNotKeepExactlySettlesInOneWrite(t *testing.T) {
	v1 := jobSpec{Command: "run", Env: map[string]any{"workers": 4, "limits": map[string]any{"cpu": 2}}}
	v2 := jobSpec{Command: "run", Env: map[string]any{"workers": 8, "limits": map[string]any{"cpu": 2}}}
	for name, newStore := range jobStores() {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			s := newStore()
			for range 3 {
				_, err := resource.PutSpec(ctx, s, "jobs/a", v1)
				require.NoError(t, err)
			}
			created := jobRevision(t, s)
			for range 3 {
				_, err := resource.PutSpec(ctx, s, "jobs/a", v2)
				require.NoError(t, err)
			}
			assert.Equal(t, created+1, jobRevision(t, s), "the same spec must be written exactly once")
			got, err := s.Get(ctx, "jobs/a")
			require.NoError(t, err)
			assert.Equal(t, int64(2), got.Value.Generation, "only a changed spec bumps the generation")
			encodes(t, v2, got.Value.Spec)
		})
	}
}

func TestWriteStatusRefusesInvalidUTF8OnCodecBackedStoresAndKeepsItExactlyInMemory(t *testing.T) {
	bad := jobStatus{Output: "exit 1: \xff\xfe\x00 garbled", Metrics: map[string]any{"code": 1}}
	for name, newStore := range jobStores() {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			s := newStore()
			obj, err := resource.PutSpec(ctx, s, "jobs/a", jobSpec{Command: "run"})
			require.NoError(t, err)
			obj, err = resource.WriteStatus(ctx, s, obj, jobStatus{Output: "fine"})
			require.NoError(t, err)
			before := jobRevision(t, s)

			_, err = resource.WriteStatus(ctx, s, obj, bad)
			if codecBacked(name) {
				require.ErrorIs(t, err, store.ErrInvalid, "a status the codec would change must be refused")
				assert.Contains(t, err.Error(), "invalid UTF-8")
				assert.Equal(t, before, jobRevision(t, s), "a refused status must write nothing")
				got, err := s.Get(ctx, "jobs/a")
				require.NoError(t, err)
				assert.Equal(t, "fine", got.Value.Status.Output)
				return
			}
			require.NoError(t, err)
			got, err := s.Get(ctx, "jobs/a")
			require.NoError(t, err)
			assert.Equal(t, bad.Output, got.Value.Status.Output, "a store without codec keeps the bytes")
			_, err = resource.WriteStatus(ctx, s, got, bad)
			require.NoError(t, err)
			assert.Equal(t, before+1, jobRevision(t, s), "the same status must be written exactly once")
		})
	}
}

func TestPutSpecRefusesInvalidUTF8OnCodecBackedStores(t *testing.T) {
	bad := jobSpec{Command: "run \xc3\x28"}
	for name, newStore := range jobStores() {
		if !codecBacked(name) {
			continue
		}
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			s := newStore()
			_, err := resource.PutSpec(ctx, s, "jobs/new", bad)
			require.ErrorIs(t, err, store.ErrInvalid, "create")
			_, err = resource.PutSpec(ctx, s, "jobs/a", jobSpec{Command: "run"})
			require.NoError(t, err)
			before := jobRevision(t, s)
			_, err = resource.PutSpec(ctx, s, "jobs/a", bad)
			require.ErrorIs(t, err, store.ErrInvalid, "update")
			assert.Equal(t, before, jobRevision(t, s), "a refused spec must write nothing")
			_, err = s.Get(ctx, "jobs/new")
			require.ErrorIs(t, err, store.ErrNotFound)
		})
	}
}

func TestWriteStatusWithNaNSettlesInOneWriteInMemory(t *testing.T) {
	ctx := t.Context()
	s := store.NewMemory[*resource.Resource[jobSpec, float64]]()
	obj, err := resource.PutSpec[jobSpec, float64](ctx, s, "jobs/a", jobSpec{})
	require.NoError(t, err)
	nan := 0.0
	nan /= nan
	for range 3 {
		obj, err = resource.WriteStatus(ctx, s, obj, nan)
		require.NoError(t, err)
	}
	rev, err := s.Revision(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), rev, "a NaN status must be found unchanged once written")
}

// The defect as users met it: a controller over a codec-backed store whose
// reconciler records a map[string]any status rewrote it at every reconcile,
// each write waking the next one.
func TestControllerRecordingAStatusTheCodecDoesNotKeepExactlyWritesItOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s := store.NewView[*job](store.NewMemory[[]byte](), nil)
	created, err := resource.PutSpec(ctx, s, "jobs/a", jobSpec{Command: "run"})
	require.NoError(t, err)

	var writes atomic.Int64
	rec := reconcile.ReconcilerFunc[*job](func(ctx context.Context, req reconcile.Request[*job]) (reconcile.Result, error) {
		if req.Deleted || writes.Load() >= 50 { // bound the damage if it loops
			return reconcile.Result{}, nil
		}
		before := req.Object.Revision
		obj, err := resource.WriteStatus(ctx, s, req.Object, jobStatus{Output: "up", Metrics: map[string]any{"pid": 4242}})
		if err == nil && obj.Revision != before {
			writes.Add(1)
		}
		return reconcile.Result{}, err
	})
	c, err := reconcile.New[*job](s, rec, reconcile.Options[*job]{Name: "jobs"})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	// The status write is created.Revision+1; once the reconcile of that
	// revision is done, a looping helper has written again.
	require.NoError(t, c.WaitForRevision(ctx, created.Revision+1))
	assert.Equal(t, created.Revision+1, jobRevision(t, s), "the reconcile of the status write must write nothing")
	assert.Equal(t, int64(1), writes.Load())
	cancel()
	require.NoError(t, <-done)
}

// outputOnly is a codec that keeps a job's status output but not its
// metrics: what JSON would see as a change, it does not keep.
type outputOnly struct{ store.JSON[*job] }

func (c outputOnly) Marshal(v *job) ([]byte, error) {
	kept := *v
	kept.Status.Metrics = nil
	return c.JSON.Marshal(&kept)
}

func TestWriteStatusJudgesAStoreThatNamesItsCodecByThatCodec(t *testing.T) {
	ctx := t.Context()
	s := store.NewView[*job](store.NewMemory[[]byte](), outputOnly{})
	obj, err := resource.PutSpec(ctx, s, "jobs/a", jobSpec{Command: "run"})
	require.NoError(t, err)
	obj, err = resource.WriteStatus(ctx, s, obj, jobStatus{Output: "up"})
	require.NoError(t, err)
	before := jobRevision(t, s)

	same, err := resource.WriteStatus(ctx, s, obj, jobStatus{Output: "up", Metrics: map[string]any{"pid": 1}})
	require.NoError(t, err)
	assert.Equal(t, obj, same)
	assert.Equal(t, before, jobRevision(t, s), "a change the store's codec does not keep must write nothing")

	_, err = resource.WriteStatus(ctx, s, obj, jobStatus{Output: "down"})
	require.NoError(t, err)
	assert.Equal(t, before+1, jobRevision(t, s), "a change the codec keeps must be written")
}
