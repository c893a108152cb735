package external_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// reconcileOnce reconciles key once with a fresh process.
func (e *env) reconcileOnce() (reconcile.Result, error) {
	r, s := e.kit(&externaltest.Faults{})
	req, err := externaltest.Request(e.t.Context(), s, key)
	require.NoError(e.t, err)
	return r.Reconcile(e.t.Context(), req)
}

// TestStatusSaysReadyAndSyncedWithTheObservedGeneration: a settled
// resource has Ready True (Available), Synced True, its observed status
// and generation; a spec change is made in the world and recorded; a
// reconcile that finds nothing to change writes nothing.
func TestStatusSaysReadyAndSyncedWithTheObservedGeneration(t *testing.T) {
	e := newEnv(t, worldNames)
	e.put(2)
	require.NoError(t, e.settle())
	obj := e.get()
	require.Equal(t, external.ReasonAvailable, e.condition(external.ConditionReady).Reason)
	require.Equal(t, resource.ConditionTrue, e.condition(external.ConditionSynced).Status)
	require.Equal(t, 2, obj.Value.Status.Size)
	require.Equal(t, obj.Value.Generation, obj.Value.ObservedGeneration)

	e.put(3)
	require.NoError(t, e.settle())
	obj = e.get()
	e.requireOneObject(3)
	require.Equal(t, 3, obj.Value.Status.Size)
	require.EqualValues(t, 2, obj.Value.ObservedGeneration)

	_, err := e.reconcileOnce()
	require.NoError(t, err)
	require.Equal(t, obj.Revision, e.get().Revision, "nothing to change: nothing written")
}

// TestARejectedObjectIsTerminalInStatusUntilItsSpecChanges: a spec the
// world refuses ends the reconcile terminal, with Synced and Ready False,
// reason Rejected, and no create left recorded; a new spec is made.
func TestARejectedObjectIsTerminalInStatusUntilItsSpecChanges(t *testing.T) {
	for _, n := range []naming{worldNames, noLookup} {
		e := newEnv(t, n)
		e.put(-1)
		err := e.settle()
		require.ErrorIs(t, err, reconcile.ErrTerminal, n)
		require.ErrorIs(t, err, external.ErrRejected, n)
		for _, ct := range []string{external.ConditionReady, external.ConditionSynced} {
			c := e.condition(ct)
			require.Equal(t, resource.ConditionFalse, c.Status, n)
			require.Contains(t, c.Message, "size -1 is not offered", n)
		}
		require.Equal(t, external.ReasonRejected, e.condition(external.ConditionSynced).Reason, n)
		require.Equal(t, external.ReasonRejected, e.condition(external.ConditionReady).Reason, n, "nothing is being created")
		require.Empty(t, e.get().Value.Status.External.Creating, n)
		require.Empty(t, e.fake.Objects(), n)

		e.put(1)
		require.NoError(t, e.settle(), n)
		e.requireOneObject(1, n)
	}
}

// TestAResourceValidateRefusesIsRejectedBeforeTheWorldIsAsked: with
// Options.Validate, a resource it refuses is terminal, Rejected in both
// conditions, before the world is asked anything, whatever its status
// says (a create forged as under way included); its deletion runs the
// cleanup whatever its spec, and once its spec is fixed it converges.
func TestAResourceValidateRefusesIsRejectedBeforeTheWorldIsAsked(t *testing.T) {
	for _, n := range []naming{worldNames, authorNames, noLookup} {
		e := newEnv(t, n)
		asked := 0
		e.wrap = func(w external.World[vmSpec, vmStatus]) external.World[vmSpec, vmStatus] {
			observe := w.Observe
			w.Observe = func(ctx context.Context, d external.Desired[vmSpec]) (external.Observation[vmStatus], error) {
				asked++
				return observe(ctx, d)
			}
			return w
		}
		e.opts = func(o *external.Options[vmSpec, vmStatus]) {
			o.Validate = func(_ context.Context, key string, s vmSpec) error {
				if s.Size > 100 {
					return fmt.Errorf("%s: size %d is more than 100", key, s.Size)
				}
				return nil
			}
		}
		e.put(101)
		obj := e.get()
		st := obj.Value.Status
		st.External.Creating = "forged"
		_, err := resource.WriteStatus(t.Context(), e.s, obj, st)
		require.NoError(t, err)

		err = e.settle()
		require.ErrorIs(t, err, reconcile.ErrTerminal, n)
		require.ErrorIs(t, err, external.ErrRejected, n)
		for _, ct := range []string{external.ConditionReady, external.ConditionSynced} {
			c := e.condition(ct)
			require.Equal(t, resource.ConditionFalse, c.Status, n)
			require.Equal(t, external.ReasonRejected, c.Reason, n)
			require.Contains(t, c.Message, "size 101 is more than 100", n)
		}
		require.Zero(t, asked, n)
		require.Empty(t, e.fake.Objects(), n)

		e.put(1)
		if n == noLookup { // the forged create is for a person to settle
			require.ErrorIs(t, e.settle(), external.ErrCreateUnknown, n)
			obj := e.get()
			st := obj.Value.Status
			st.External.Creating = ""
			_, err := resource.WriteStatus(t.Context(), e.s, obj, st)
			require.NoError(t, err)
		}
		require.NoError(t, e.settle(), n)
		e.requireOneObject(1, n)
		e.put(101)
		require.Error(t, e.settle(), n)
		e.del()
		require.NoError(t, e.settle(), n)
		require.Empty(t, e.fake.Objects(), n, "a refused spec does not hold its cleanup")
	}
}

var errDown = errors.New("connection refused")

// TestADependencyDownIsBlamedAndInStatus: an error Classify calls Down is
// returned matching dependency.ErrDown, named for Options.Dependency (so
// the controller blames it and holds its keys), and is in status with
// reason DependencyDown; once the world serves, the key settles.
func TestADependencyDownIsBlamedAndInStatus(t *testing.T) {
	e := newEnv(t, worldNames)
	dep := &dependency.Dependency{Name: "vm-api", Check: func(context.Context) error { return nil }}
	e.opts = func(o *external.Options[vmSpec, vmStatus]) {
		o.Dependency = dep
		o.Classify = func(err error) external.Class {
			if errors.Is(err, errDown) {
				return external.Down
			}
			return external.Transient
		}
	}
	e.put(2)
	e.fake.SetDown(errDown)
	_, err := e.reconcileOnce()
	require.ErrorIs(t, err, dependency.ErrDown)
	require.Contains(t, err.Error(), "vm-api")
	require.NotErrorIs(t, err, reconcile.ErrTerminal)
	require.Equal(t, external.ReasonDependencyDown, e.condition(external.ConditionSynced).Reason)
	require.Equal(t, resource.ConditionFalse, e.condition(external.ConditionReady).Status)

	e.fake.SetDown(nil)
	require.NoError(t, e.settle())
	e.requireOneObject(2)
}

// TestATransientErrorIsInStatusAndRetried: any other error of the world
// is returned as it is (backoff), in status with reason Error, and the
// key settles once the world answers.
func TestATransientErrorIsInStatusAndRetried(t *testing.T) {
	e := newEnv(t, worldNames)
	e.put(2)
	e.fake.SetDown(errors.New("503 try later"))
	_, err := e.reconcileOnce()
	require.ErrorContains(t, err, "503 try later")
	require.NotErrorIs(t, err, reconcile.ErrTerminal)
	require.NotErrorIs(t, err, dependency.ErrDown)
	require.Equal(t, external.ReasonError, e.condition(external.ConditionSynced).Reason)
	e.fake.SetDown(nil)
	require.NoError(t, e.settle())
	e.requireOneObject(2)
}

// TestRetainKeepsTheObjectUnmarkedAndPruneNeverTakesIt: under Retain,
// deleting the resource keeps the external object, without its mark, so
// no prune pass counts it as this operator's.
func TestRetainKeepsTheObjectUnmarkedAndPruneNeverTakesIt(t *testing.T) {
	e := newEnv(t, worldNames)
	e.opts = func(o *external.Options[vmSpec, vmStatus]) {
		o.Reclaim = func(vmSpec) external.Reclaim { return external.Retain }
	}
	e.put(2)
	require.NoError(t, e.settle())
	e.del()
	require.NoError(t, e.settle())
	_, err := e.s.Get(t.Context(), key)
	require.ErrorIs(t, err, store.ErrNotFound)
	objs := e.fake.Objects()
	require.Len(t, objs, 1)
	require.Empty(t, objs[0].Mark)
}

// TestNewRefusesBadOptionsWithErrInvalid: missing parts are ErrInvalid.
func TestNewRefusesBadOptionsWithErrInvalid(t *testing.T) {
	e := newEnv(t, worldNames)
	w := externaltest.Client(e.fake, externaltest.FakeOptions[vmSpec, vmStatus]{})
	good := e.options()
	for name, mod := range map[string]func(*external.Options[vmSpec, vmStatus], *external.World[vmSpec, vmStatus]){
		"no name":    func(o *external.Options[vmSpec, vmStatus], _ *external.World[vmSpec, vmStatus]) { o.Name = "" },
		"no record":  func(o *external.Options[vmSpec, vmStatus], _ *external.World[vmSpec, vmStatus]) { o.Record = nil },
		"bad name":   func(o *external.Options[vmSpec, vmStatus], _ *external.World[vmSpec, vmStatus]) { o.Name = "a b" },
		"bad prefix": func(o *external.Options[vmSpec, vmStatus], _ *external.World[vmSpec, vmStatus]) { o.Prefix = "\xff" },
		"no observe": func(_ *external.Options[vmSpec, vmStatus], w *external.World[vmSpec, vmStatus]) { w.Observe = nil },
		"retain, no unmark": func(o *external.Options[vmSpec, vmStatus], w *external.World[vmSpec, vmStatus]) {
			o.Reclaim = func(vmSpec) external.Reclaim { return external.Retain }
			w.Unmark = nil
		},
	} {
		o, ww := good, w
		mod(&o, &ww)
		_, err := external.New(e.s, ww, o)
		require.ErrorIs(t, err, external.ErrInvalid, name)
		require.ErrorIs(t, err, store.ErrInvalid, name)
	}
	_, err := external.New(nil, w, good)
	require.ErrorIs(t, err, external.ErrInvalid)
}
