package resource_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

type appSpec struct {
	Image    string
	Replicas int
	Labels   map[string]string
}

type appStatus struct {
	ReadyReplicas int
}

type app = resource.Resource[appSpec, appStatus]

// newAppStore returns a memory store that fails the test if a value it
// handed out is changed in place. Call checkShared at the end of the test:
// the store checks at the start of each operation.
func newAppStore(t *testing.T, opts ...store.MemoryOption) *store.Memory[*app] {
	opts = append(opts, store.WithMutationCheck(func(err error) {
		t.Errorf("shared value mutated: %v", err)
	}))
	return store.NewMemory[*app](opts...)
}

func checkShared(t *testing.T, s *store.Memory[*app]) {
	t.Helper()
	_, err := s.Revision(context.Background())
	require.NoError(t, err)
}

func revision(t *testing.T, s store.Store[*app]) int64 {
	t.Helper()
	rev, err := s.Revision(context.Background())
	require.NoError(t, err)
	return rev
}

func TestPutSpecBumpsGenerationOnlyOnChange(t *testing.T) {
	ctx := t.Context()
	s := newAppStore(t)
	v1 := appSpec{Image: "web:1", Replicas: 2}
	v2 := appSpec{Image: "web:2", Replicas: 2}

	created, err := resource.PutSpec(ctx, s, "apps/web", v1)
	require.NoError(t, err)
	assert.Equal(t, int64(1), created.Value.Generation)
	assert.Equal(t, v1, created.Value.Spec)

	same, err := resource.PutSpec(ctx, s, "apps/web", appSpec{Image: "web:1", Replicas: 2})
	require.NoError(t, err)
	assert.Equal(t, created, same, "an unchanged spec must return the stored object")
	assert.Equal(t, created.Revision, revision(t, s), "an unchanged spec must write nothing")

	changed, err := resource.PutSpec(ctx, s, "apps/web", v2)
	require.NoError(t, err)
	assert.Equal(t, int64(2), changed.Value.Generation)
	assert.Equal(t, v2, changed.Value.Spec)
	assert.Greater(t, changed.Revision, created.Revision)

	back, err := resource.PutSpec(ctx, s, "apps/web", v1)
	require.NoError(t, err)
	assert.Equal(t, int64(3), back.Value.Generation, "changing back is a change")
	checkShared(t, s)
}

func TestPutSpecTreatsNilAndEmptyAsEqual(t *testing.T) {
	ctx := t.Context()
	s := newAppStore(t)
	created, err := resource.PutSpec(ctx, s, "apps/web", appSpec{Image: "web:1", Labels: map[string]string{}})
	require.NoError(t, err)

	same, err := resource.PutSpec(ctx, s, "apps/web", appSpec{Image: "web:1"})
	require.NoError(t, err)
	assert.Equal(t, created.Revision, same.Revision)
	assert.Equal(t, int64(1), same.Value.Generation)
}

// hiddenSpec has unexported fields, which go-cmp refuses by default.
type hiddenSpec struct {
	Name   string
	secret int
}

func TestPutSpecComparesUnexportedFields(t *testing.T) {
	ctx := t.Context()
	s := store.NewMemory[*resource.Resource[hiddenSpec, struct{}]]()

	first, err := resource.PutSpec(ctx, s, "k", hiddenSpec{Name: "a", secret: 1})
	require.NoError(t, err)
	same, err := resource.PutSpec(ctx, s, "k", hiddenSpec{Name: "a", secret: 1})
	require.NoError(t, err)
	changed, err := resource.PutSpec(ctx, s, "k", hiddenSpec{Name: "a", secret: 2})
	require.NoError(t, err)

	assert.Equal(t, first.Revision, same.Revision)
	assert.Equal(t, int64(2), changed.Value.Generation)
}

func TestPutSpecKeepsStatusAndConditions(t *testing.T) {
	ctx := t.Context()
	s := newAppStore(t)
	obj, err := resource.PutSpec(ctx, s, "apps/web", appSpec{Image: "web:1"})
	require.NoError(t, err)
	ready := resource.Condition{Type: "Ready", Status: resource.ConditionTrue, Reason: "Running"}
	_, err = resource.WriteStatus(ctx, s, obj, appStatus{ReadyReplicas: 1}, ready)
	require.NoError(t, err)

	obj, err = resource.PutSpec(ctx, s, "apps/web", appSpec{Image: "web:2"})
	require.NoError(t, err)

	assert.Equal(t, appStatus{ReadyReplicas: 1}, obj.Value.Status)
	assert.Equal(t, int64(1), obj.Value.ObservedGeneration)
	assert.Equal(t, int64(2), obj.Value.Generation)
	got, ok := resource.FindCondition(obj.Value.Conditions, "Ready")
	require.True(t, ok)
	assert.Equal(t, "Running", got.Reason)
	checkShared(t, s)
}

func TestWriteStatusRecordsObservedGeneration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := newAppStore(t)
		_, err := resource.PutSpec(ctx, s, "apps/web", appSpec{Image: "web:1"})
		require.NoError(t, err)
		obj, err := resource.PutSpec(ctx, s, "apps/web", appSpec{Image: "web:2"})
		require.NoError(t, err)
		require.Equal(t, int64(0), obj.Value.ObservedGeneration)

		ready := resource.Condition{Type: "Ready", Status: resource.ConditionTrue, Reason: "Running", Message: "2/2 up"}
		written, err := resource.WriteStatus(ctx, s, obj, appStatus{ReadyReplicas: 2}, ready)
		require.NoError(t, err)

		stored, err := s.Get(ctx, "apps/web")
		require.NoError(t, err)
		assert.Equal(t, written, stored)
		assert.Equal(t, int64(2), stored.Value.ObservedGeneration)
		assert.Equal(t, int64(2), stored.Value.Generation)
		assert.Equal(t, appStatus{ReadyReplicas: 2}, stored.Value.Status)
		assert.Equal(t, appSpec{Image: "web:2"}, stored.Value.Spec)
		ready.LastTransitionTime = time.Now()
		assert.Equal(t, []resource.Condition{ready}, stored.Value.Conditions)
		checkShared(t, s)
	})
}

func TestWriteStatusConflictsWhenSpecChangedSinceRead(t *testing.T) {
	ctx := t.Context()
	s := newAppStore(t)
	reconciled, err := resource.PutSpec(ctx, s, "apps/web", appSpec{Image: "web:1"})
	require.NoError(t, err)
	newer, err := resource.PutSpec(ctx, s, "apps/web", appSpec{Image: "web:2"})
	require.NoError(t, err)

	_, err = resource.WriteStatus(ctx, s, reconciled, appStatus{ReadyReplicas: 1},
		resource.Condition{Type: "Ready", Status: resource.ConditionTrue})

	require.ErrorIs(t, err, store.ErrConflict)
	stored, err := s.Get(ctx, "apps/web")
	require.NoError(t, err)
	assert.Equal(t, newer, stored, "the spec write must survive and no status be written")
	assert.Equal(t, appSpec{Image: "web:2"}, stored.Value.Spec)
	assert.Zero(t, stored.Value.Status)
	assert.Zero(t, stored.Value.ObservedGeneration)
	assert.Empty(t, stored.Value.Conditions)
	checkShared(t, s)
}

func TestWriteStatusWritesNothingWhenNothingChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := newAppStore(t)
		obj, err := resource.PutSpec(ctx, s, "apps/web", appSpec{Image: "web:1"})
		require.NoError(t, err)
		ready := resource.Condition{Type: "Ready", Status: resource.ConditionTrue, Reason: "Running"}
		obj, err = resource.WriteStatus(ctx, s, obj, appStatus{ReadyReplicas: 1}, ready)
		require.NoError(t, err)
		before := revision(t, s)

		<-time.After(time.Minute) // a later reconcile, with a later clock
		again, err := resource.WriteStatus(ctx, s, obj, appStatus{ReadyReplicas: 1}, ready)
		require.NoError(t, err)
		assert.Equal(t, obj, again)
		assert.Equal(t, before, revision(t, s), "an unchanged status must write nothing")

		noConds, err := resource.WriteStatus(ctx, s, obj, appStatus{ReadyReplicas: 1})
		require.NoError(t, err)
		assert.Equal(t, obj, noConds, "omitting conditions keeps them")
		assert.Equal(t, before, revision(t, s))

		// Even an out-of-date object writes nothing when there is nothing to
		// record: the newer version is reconciled on its own.
		_, err = resource.PutSpec(ctx, s, "apps/web", appSpec{Image: "web:2"})
		require.NoError(t, err)
		stale, err := resource.WriteStatus(ctx, s, obj, appStatus{ReadyReplicas: 1}, ready)
		require.NoError(t, err)
		assert.Equal(t, obj, stale)
		checkShared(t, s)
	})
}

func TestWriteStatusWritesWhenOnlyObservedGenerationLags(t *testing.T) {
	ctx := t.Context()
	s := newAppStore(t)
	obj, err := resource.PutSpec(ctx, s, "apps/web", appSpec{Image: "web:1"})
	require.NoError(t, err)
	_, err = resource.WriteStatus(ctx, s, obj, appStatus{ReadyReplicas: 1})
	require.NoError(t, err)
	obj, err = resource.PutSpec(ctx, s, "apps/web", appSpec{Image: "web:2"})
	require.NoError(t, err)

	written, err := resource.WriteStatus(ctx, s, obj, appStatus{ReadyReplicas: 1})
	require.NoError(t, err)
	assert.Greater(t, written.Revision, obj.Revision)
	assert.Equal(t, int64(2), written.Value.ObservedGeneration)
}

func TestWriteStatusConditionTransitionTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := newAppStore(t)
		obj, err := resource.PutSpec(ctx, s, "apps/web", appSpec{Image: "web:1"})
		require.NoError(t, err)
		t0 := time.Now()
		obj, err = resource.WriteStatus(ctx, s, obj, appStatus{},
			resource.Condition{Type: "Ready", Status: resource.ConditionFalse, Reason: "Pulling"})
		require.NoError(t, err)

		<-time.After(time.Minute)
		obj, err = resource.WriteStatus(ctx, s, obj, appStatus{},
			resource.Condition{Type: "Ready", Status: resource.ConditionFalse, Reason: "Starting"},
			resource.Condition{Type: "Degraded", Status: resource.ConditionFalse})
		require.NoError(t, err)
		ready, _ := resource.FindCondition(obj.Value.Conditions, "Ready")
		assert.Equal(t, "Starting", ready.Reason, "the reason is updated")
		assert.True(t, ready.LastTransitionTime.Equal(t0), "same status keeps the transition time")
		degraded, _ := resource.FindCondition(obj.Value.Conditions, "Degraded")
		assert.True(t, degraded.LastTransitionTime.Equal(time.Now()), "a new condition starts now")

		<-time.After(time.Minute)
		t2 := time.Now()
		obj, err = resource.WriteStatus(ctx, s, obj, appStatus{ReadyReplicas: 1},
			resource.Condition{Type: "Ready", Status: resource.ConditionTrue, Reason: "Running"})
		require.NoError(t, err)
		ready, _ = resource.FindCondition(obj.Value.Conditions, "Ready")
		assert.Equal(t, resource.ConditionTrue, ready.Status)
		assert.True(t, ready.LastTransitionTime.Equal(t2), "a status change moves the transition time")
		assert.Equal(t, []string{"Ready", "Degraded"}, conditionTypes(obj.Value.Conditions), "order is kept")

		// A transition time given by the caller is used for a transition.
		given := t0.Add(-time.Hour)
		obj, err = resource.WriteStatus(ctx, s, obj, appStatus{},
			resource.Condition{Type: "Ready", Status: resource.ConditionFalse, LastTransitionTime: given})
		require.NoError(t, err)
		ready, _ = resource.FindCondition(obj.Value.Conditions, "Ready")
		assert.True(t, ready.LastTransitionTime.Equal(given))
		checkShared(t, s)
	})
}

func conditionTypes(conds []resource.Condition) []string {
	types := make([]string, len(conds))
	for i, c := range conds {
		types[i] = c.Type
	}
	return types
}

func TestSetConditionReturnsNewSlice(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	conds := make([]resource.Condition, 1, 4) // spare capacity must not be written
	conds[0] = resource.Condition{Type: "Ready", Status: resource.ConditionFalse, LastTransitionTime: t0}
	orig := slices.Clone(conds[:cap(conds)])

	added := resource.SetCondition(conds, resource.Condition{Type: "Synced", Status: resource.ConditionTrue}, t1)
	flipped := resource.SetCondition(conds, resource.Condition{Type: "Ready", Status: resource.ConditionTrue}, t1)
	kept := resource.SetCondition(conds, resource.Condition{Type: "Ready", Status: resource.ConditionFalse, Message: "m"}, t1)

	assert.Equal(t, orig, conds[:cap(conds)], "the input slice was changed")
	assert.Equal(t, []resource.Condition{conds[0], {Type: "Synced", Status: resource.ConditionTrue, LastTransitionTime: t1}}, added)
	assert.Equal(t, []resource.Condition{{Type: "Ready", Status: resource.ConditionTrue, LastTransitionTime: t1}}, flipped)
	assert.Equal(t, []resource.Condition{{Type: "Ready", Status: resource.ConditionFalse, Message: "m", LastTransitionTime: t0}}, kept)

	got, ok := resource.FindCondition(added, "Synced")
	assert.True(t, ok)
	assert.Equal(t, resource.ConditionTrue, got.Status)
	_, ok = resource.FindCondition(added, "Missing")
	assert.False(t, ok)
	_, ok = resource.FindCondition(nil, "Ready")
	assert.False(t, ok)
}

func TestResourceHelpersRejectBadInput(t *testing.T) {
	ctx := t.Context()
	s := newAppStore(t)
	obj, err := resource.PutSpec(ctx, s, "apps/web", appSpec{Image: "web:1"})
	require.NoError(t, err)
	before := revision(t, s)

	cases := map[string]func() error{
		"PutSpec nil store": func() error {
			_, err := resource.PutSpec[appSpec, appStatus](ctx, nil, "k", appSpec{})
			return err
		},
		"PutSpec empty key": func() error {
			_, err := resource.PutSpec(ctx, s, "", appSpec{})
			return err
		},
		"WriteStatus nil store": func() error {
			_, err := resource.WriteStatus[appSpec, appStatus](ctx, nil, obj, appStatus{})
			return err
		},
		"WriteStatus nil value": func() error {
			_, err := resource.WriteStatus(ctx, s, store.Object[*app]{Key: "apps/web", Revision: obj.Revision}, appStatus{})
			return err
		},
		"WriteStatus zero revision": func() error {
			_, err := resource.WriteStatus(ctx, s, store.Object[*app]{Key: "apps/web", Value: obj.Value}, appStatus{})
			return err
		},
		"WriteStatus empty key": func() error {
			bad := obj
			bad.Key = ""
			_, err := resource.WriteStatus(ctx, s, bad, appStatus{ReadyReplicas: 1})
			return err
		},
		"WriteStatus condition without type": func() error {
			_, err := resource.WriteStatus(ctx, s, obj, appStatus{}, resource.Condition{Status: resource.ConditionTrue})
			return err
		},
		"WriteStatus condition with unknown status": func() error {
			_, err := resource.WriteStatus(ctx, s, obj, appStatus{}, resource.Condition{Type: "Ready", Status: "yes"})
			return err
		},
	}
	for name, call := range cases {
		t.Run(name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { err = call() })
			assert.ErrorIs(t, err, store.ErrInvalid)
		})
	}
	assert.Equal(t, before, revision(t, s), "bad input wrote something")
}

// nilValueStore is a store whose Get returns a nil resource, as a faulty
// backend might.
type nilValueStore struct{ store.Store[*app] }

func (nilValueStore) Get(_ context.Context, key string) (store.Object[*app], error) {
	return store.Object[*app]{Key: key, Revision: 1}, nil
}

func TestPutSpecRejectsStoredNilValue(t *testing.T) {
	s := nilValueStore{store.NewMemory[*app]()}
	var err error
	require.NotPanics(t, func() { _, err = resource.PutSpec(t.Context(), s, "k", appSpec{}) })
	assert.ErrorIs(t, err, store.ErrInvalid)
}

func TestResourceHelpersDoNotMutateSharedValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		// With no report function the store fails the next operation if a
		// value it handed out was changed.
		s := store.NewMemory[*app](store.WithMutationCheck(nil))
		obj, err := resource.PutSpec(ctx, s, "apps/web", appSpec{Image: "web:1", Labels: map[string]string{"tier": "front"}})
		require.NoError(t, err)
		obj, err = resource.WriteStatus(ctx, s, obj, appStatus{ReadyReplicas: 1},
			resource.Condition{Type: "Ready", Status: resource.ConditionFalse})
		require.NoError(t, err)
		held := obj.Value
		snapshot := *held
		snapshot.Conditions = slices.Clone(held.Conditions)

		<-time.After(time.Second)
		obj, err = resource.WriteStatus(ctx, s, obj, appStatus{ReadyReplicas: 2},
			resource.Condition{Type: "Ready", Status: resource.ConditionTrue},
			resource.Condition{Type: "Degraded", Status: resource.ConditionFalse})
		require.NoError(t, err)
		_, err = resource.PutSpec(ctx, s, "apps/web", appSpec{Image: "web:2"})
		require.NoError(t, err)

		assert.Empty(t, cmp.Diff(snapshot, *held), "a value handed out by the store was changed")
		_, _, err = s.List(ctx, "")
		assert.NoError(t, err, "the store detected a mutation")
	})
}

func TestPutSpecConcurrentWithStatusWritesLosesNoSpecWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			writersPerKey = 4
			putsPerWriter = 30
			statusWriters = 2
			statusWrites  = 60
		)
		ctx := t.Context()
		// A short history keeps the mutation check, which walks it on every
		// operation, cheap.
		s := newAppStore(t, store.WithHistory(32))
		keys := []string{"apps/a", "apps/b", "apps/c"}

		type put struct {
			spec   appSpec
			unique bool
			got    store.Object[*app]
		}
		var mu sync.Mutex
		puts := map[string][]put{}
		var wg sync.WaitGroup
		var statusWritten atomic.Int64
		for _, key := range keys {
			for w := range writersPerKey {
				wg.Go(func() {
					for i := range putsPerWriter {
						spec := appSpec{Image: fmt.Sprintf("%s-w%d-%d", key, w, i), Replicas: i}
						specs := []appSpec{spec}
						if i%5 == 0 {
							specs = append(specs, spec) // usually a no-op
						}
						for j, spec := range specs {
							<-time.After(time.Duration(rand.IntN(3)) * time.Millisecond)
							got, err := resource.PutSpec(ctx, s, key, spec, store.ModifyOptions{Attempts: 1000})
							if !assert.NoError(t, err) {
								return
							}
							mu.Lock()
							puts[key] = append(puts[key], put{spec: spec, unique: j == 0, got: got})
							mu.Unlock()
						}
					}
				})
			}
			for range statusWriters {
				wg.Go(func() {
					for i := range statusWrites {
						obj, err := s.Get(ctx, key)
						if err != nil {
							continue // not created yet
						}
						if obj.Value.ObservedGeneration > obj.Value.Generation {
							t.Errorf("%s: observed generation %d ahead of generation %d", key, obj.Value.ObservedGeneration, obj.Value.Generation)
						}
						// Reconcile for a while, letting spec writes land meanwhile.
						<-time.After(time.Duration(rand.IntN(3)) * time.Millisecond)
						_, err = resource.WriteStatus(ctx, s, obj, appStatus{ReadyReplicas: i},
							resource.Condition{Type: "Ready", Status: []resource.ConditionStatus{resource.ConditionTrue, resource.ConditionFalse}[i%2]})
						if err == nil {
							statusWritten.Add(1)
						} else if !assert.ErrorIs(t, err, store.ErrConflict) {
							return
						}
					}
				})
			}
		}
		wg.Wait()
		assert.Positive(t, statusWritten.Load(), "no status write succeeded: the test proves nothing about them")

		for _, key := range keys {
			final, err := s.Get(ctx, key)
			require.NoError(t, err)
			ps := puts[key]
			require.Len(t, ps, writersPerKey*(putsPerWriter+putsPerWriter/5))

			last := ps[0]
			generations := map[int64]bool{}
			uniqueGenerations := map[int64]bool{}
			for _, p := range ps {
				assert.Equal(t, p.spec, p.got.Value.Spec, "%s: PutSpec returned another spec", key)
				if p.got.Revision > last.got.Revision {
					last = p
				}
				generations[p.got.Value.Generation] = true
				if p.unique {
					assert.False(t, uniqueGenerations[p.got.Value.Generation], "%s: two spec changes got generation %d", key, p.got.Value.Generation)
					uniqueGenerations[p.got.Value.Generation] = true
				}
			}
			assert.Equal(t, last.spec, final.Value.Spec, "%s: the last acknowledged spec write was lost", key)
			assert.Equal(t, int64(len(generations)), final.Value.Generation, "%s: generation is not the number of spec changes", key)
			for g := int64(1); g <= final.Value.Generation; g++ {
				assert.True(t, generations[g], "%s: no spec write got generation %d", key, g)
			}
			assert.GreaterOrEqual(t, final.Value.Generation, int64(writersPerKey*putsPerWriter))
		}
		checkShared(t, s)
	})
}
