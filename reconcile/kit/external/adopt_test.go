package external_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/reconcile/kit/prune"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// forgeCreating writes key's status as a token holder may: a create
// under way (creating), naming the object name.
func (e *env) forgeCreating(name string) {
	obj := e.get()
	st := obj.Value.Status
	st.External = external.Record{Name: name, Creating: "forged"}
	_, err := resource.WriteStatus(e.t.Context(), e.s, obj, st)
	require.NoError(e.t, err)
}

// TestAStatusForgedToSayACreateIsUnderWayNeverAdoptsAnObjectTheOperatorDidNotMake:
// an object that exists, unmarked or marked by another store, operator
// or key, named by a status forged to record a create, is neither
// updated, nor marked, nor deleted with the resource: the reconcile ends
// terminal with ErrNotAdopted, Synced False with reason NotAdopted, with
// or without the operator's own record of its creates, whether Observe
// or List reads the marks back.
func TestAStatusForgedToSayACreateIsUnderWayNeverAdoptsAnObjectTheOperatorDidNotMake(t *testing.T) {
	marks := map[string]func(id string) string{
		"unmarked":         func(string) string { return "" },
		"another store":    func(string) string { return vmMark("vmop", "other", key) },
		"another operator": func(id string) string { return vmMark("someone", id, key) },
		"another key":      func(id string) string { return vmMark("vmop", id, "vms/b") },
	}
	for _, n := range []naming{worldNames, authorNames} {
		for _, creates := range []bool{false, true} {
			for kind, mark := range marks {
				e := newEnv(t, n)
				if creates {
					e.opts = func(o *external.Options[vmSpec, vmStatus]) { o.Creates = external.CreatesDir(t.TempDir()) }
					e.wrap = markless // the kit reads marks from List
				}
				id, err := e.s.(store.Identifier).Identity(t.Context())
				require.NoError(t, err)
				victim := externaltest.Object[vmSpec]{Name: "vm-a", Spec: vmSpec{Size: 7}, Mark: mark(id)}
				e.fake.Put(victim)
				e.put(2)
				e.forgeCreating(victim.Name)
				msg := []any{"%v, %s, creates recorded: %v", n, kind, creates}

				err = e.settle()
				require.ErrorIs(t, err, external.ErrNotAdopted, msg...)
				require.ErrorIs(t, err, reconcile.ErrTerminal, msg...)
				c := e.condition(external.ConditionSynced)
				require.Equal(t, resource.ConditionFalse, c.Status, msg...)
				require.Equal(t, external.ReasonNotAdopted, c.Reason, msg...)
				require.Equal(t, []externaltest.Object[vmSpec]{victim}, e.fake.Objects(), msg...)

				e.del()
				require.NoError(t, e.settle(), msg...)
				_, err = e.s.Get(t.Context(), key)
				require.ErrorIs(t, err, store.ErrNotFound, msg...)
				require.Equal(t, []externaltest.Object[vmSpec]{victim}, e.fake.Objects(), "deleted: "+kind)
				require.Equal(t, 0, e.fake.Made(), msg...)
			}
		}
	}
}

// markless is w with an Observe that reads no mark back: the kit asks
// List for it.
func markless(w external.World[vmSpec, vmStatus]) external.World[vmSpec, vmStatus] {
	observe := w.Observe
	w.Observe = func(ctx context.Context, d external.Desired[vmSpec]) (external.Observation[vmStatus], error) {
		o, err := observe(ctx, d)
		o.Mark = external.Mark{}
		return o, err
	}
	return w
}

// vmMark is the text of a mark of owner, from store id, for key k.
func vmMark(owner, id, k string) string {
	return external.Mark{Mark: prune.Mark{Owner: owner, Store: id}, Key: k, Create: "c"}.String()
}

// TestAnObjectLeftUnmarkedByACrashIsAdoptedOnlyByTheOperatorsOwnRecord:
// where the world stores the mark apart from the object, a crash between
// them leaves the object unmarked; the next process adopts it (marks it,
// names it in status, Ready, made once) only if its own record of
// creates (Options.Creates) holds that create; one with another record
// leaves it alone, unmarked, never deleted (NotAdopted).
func TestAnObjectLeftUnmarkedByACrashIsAdoptedOnlyByTheOperatorsOwnRecord(t *testing.T) {
	fresh := func(dir external.CreatesDir) *env {
		e := newEnv(t, authorNames)
		e.markApart = true
		e.opts = func(o *external.Options[vmSpec, vmStatus]) { o.Creates = dir }
		e.put(2)
		return e
	}
	count := &externaltest.Faults{}
	require.NoError(t, converging(fresh(external.CreatesDir(t.TempDir())), count))
	at := 0
	for _, s := range count.Steps() {
		if s.Op == "create mark" {
			at = s.N
		}
	}
	for _, own := range []bool{true, false} {
		dir := external.CreatesDir(t.TempDir())
		e := fresh(dir)
		require.ErrorIs(t, converging(e, &externaltest.Faults{At: at}), externaltest.ErrCrash)
		require.Equal(t, "", e.fake.Objects()[0].Mark, "left unmarked")

		if !own {
			e.opts = func(o *external.Options[vmSpec, vmStatus]) { o.Creates = external.CreatesDir(t.TempDir()) }
			require.ErrorIs(t, e.settle(), external.ErrNotAdopted)
			e.del()
			require.NoError(t, e.settle())
			require.Len(t, e.fake.Objects(), 1, "an object not known to be the operator's is kept")
			continue
		}
		require.NoError(t, e.settle())
		e.requireOneObject(2)
		require.Equal(t, 1, e.fake.Made())
		held, err := dir.Holds(t.Context(), key, "")
		require.NoError(t, err)
		require.False(t, held)
	}
}

// TestACreateTheWorldSaysMadeNothingIsForgottenAndRetried: a create whose
// error says it made nothing (NothingMade: the name was taken meanwhile)
// is forgotten, in status and in the operator's own record, and retried
// with backoff: the object that took the name is not adopted for it.
func TestACreateTheWorldSaysMadeNothingIsForgottenAndRetried(t *testing.T) {
	e := newEnv(t, authorNames)
	dir := external.CreatesDir(t.TempDir())
	e.opts = func(o *external.Options[vmSpec, vmStatus]) { o.Creates = dir }
	taken := externaltest.Object[vmSpec]{Name: "vm-a", Spec: vmSpec{Size: 2}}
	e.wrap = func(w external.World[vmSpec, vmStatus]) external.World[vmSpec, vmStatus] {
		w.Create = func(context.Context, external.Desired[vmSpec]) (string, error) {
			e.fake.Put(taken) // someone else's, made since Observe
			return "", external.NothingMade(errors.New("the name is taken"))
		}
		return w
	}
	e.put(2)
	r, s := e.kit(&externaltest.Faults{})
	req, err := externaltest.Request(t.Context(), s, key)
	require.NoError(t, err)
	_, err = r.Reconcile(t.Context(), req)
	require.ErrorIs(t, err, external.ErrNothingMade)
	require.NotErrorIs(t, err, reconcile.ErrTerminal)
	require.Empty(t, e.get().Value.Status.External.Creating)
	e.wrap = nil
	require.NoError(t, e.settle())
	require.Equal(t, []externaltest.Object[vmSpec]{taken}, e.fake.Objects(), "the object that took the name is adopted")
}
