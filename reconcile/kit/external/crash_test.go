package external_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// everyCrash runs scenario on a fresh env with setup, crashing at each
// step of it, then settles with a fresh process and calls check.
func everyCrash(t *testing.T, n naming, setup func(*env), scenario func(*env, *externaltest.Faults) error, check func(e *env, msg string)) {
	externaltest.EveryCrash(t, func(t *testing.T, f *externaltest.Faults) (func(*testing.T), error) {
		e := newEnv(t, n)
		setup(e)
		err := scenario(e, f)
		return func(t *testing.T) {
			require.NoError(t, e.settle(), n)
			check(e, n.String())
		}, err
	})
}

// stepOf returns the number of the first step op of converging a new
// key.
func stepOf(t *testing.T, n naming, op string) int {
	e := newEnv(t, n)
	e.put(2)
	f := &externaltest.Faults{}
	require.NoError(t, converging(e, f))
	for _, s := range f.Steps() {
		if s.Op == op {
			return s.N
		}
	}
	t.Fatalf("no step %s in %v", op, f.Steps())
	return 0
}

// converging settles key once with the kit's steps made through f.
func converging(e *env, f *externaltest.Faults) error {
	r, s := e.kit(f)
	return externaltest.Settle(e.t.Context(), r, s, key, 20)
}

// TestACrashAtEveryStepOfACreateLeavesExactlyOneObjectWithoutAPerson: a
// process killed before or after any step of a create (each write of the
// store, each call of the world), then started again, ends with exactly
// one external object, made once (no duplicate, none leaked), named in
// status, and no person asked, when the world can be looked up (List) or
// the author names objects.
func TestACrashAtEveryStepOfACreateLeavesExactlyOneObjectWithoutAPerson(t *testing.T) {
	for _, n := range []naming{worldNames, authorNames} {
		everyCrash(t, n, func(e *env) { e.put(2) }, converging, func(e *env, msg string) {
			e.requireOneObject(2, msg)
			require.Equal(t, 1, e.fake.Made(), msg+": made once")
		})
	}
}

// TestACrashAtEveryStepOfADeleteLeavesNoObjectAndTheResourceGone: a
// process killed before or after any step of a deletion, then started
// again, deletes the external object and then the resource: nothing is
// leaked, nothing is left marked for deletion.
func TestACrashAtEveryStepOfADeleteLeavesNoObjectAndTheResourceGone(t *testing.T) {
	for _, n := range []naming{worldNames, authorNames, noLookup} {
		setup := func(e *env) {
			e.put(2)
			require.NoError(t, e.settle())
			e.del()
		}
		everyCrash(t, n, setup, converging, func(e *env, msg string) {
			require.Empty(t, e.fake.Objects(), msg)
			_, err := e.s.Get(e.t.Context(), key)
			require.ErrorIs(t, err, store.ErrNotFound, msg)
		})
	}
}

// TestACreateCutShortWhereNothingCanLookItUpAsksAPerson: without List or
// a chosen name, a create whose result is unknown is never made again
// blindly: the reconcile ends terminal with ErrCreateUnknown, Synced
// False with reason CreateUnknown in status, and a person who writes the
// object's name into the record settles it, with one object made.
func TestACreateCutShortWhereNothingCanLookItUpAsksAPerson(t *testing.T) {
	e := newEnv(t, noLookup)
	e.put(2)
	f := &externaltest.Faults{At: stepOf(t, noLookup, "create"), After: true}
	require.ErrorIs(t, converging(e, f), externaltest.ErrCrash)

	err := e.settle()
	require.ErrorIs(t, err, external.ErrCreateUnknown)
	require.ErrorIs(t, err, reconcile.ErrTerminal)
	c := e.condition(external.ConditionSynced)
	require.Equal(t, external.ReasonCreateUnknown, c.Reason)
	require.Contains(t, c.Message, "convergectl status")
	require.Equal(t, 1, e.fake.Made())

	// The person finds obj-1 and writes its name.
	obj := e.get()
	st := obj.Value.Status
	st.External = external.Record{Name: e.fake.Objects()[0].Name}
	_, err = resource.WriteStatus(e.t.Context(), e.s, obj, st)
	require.NoError(t, err)
	require.NoError(t, e.settle())
	e.requireOneObject(2)
	require.Equal(t, 1, e.fake.Made())
}
