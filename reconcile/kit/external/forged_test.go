package external_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// forgeName writes key's status as a token holder may: the record names
// the object name, no create under way.
func (e *env) forgeName(name string) {
	obj := e.get()
	st := obj.Value.Status
	st.External = external.Record{Name: name}
	_, err := resource.WriteStatus(e.t.Context(), e.s, obj, st)
	require.NoError(e.t, err)
}

// forgery is an object a forged status names, and how it is marked.
type forgery struct {
	what, name string
	mark       func(id string) string // "" for none
}

var forgeries = []forgery{
	{"another key's object", "obj-b", func(id string) string { return vmMark("vmop", id, "vms/b") }},
	{"another operator's object", "obj-x", func(id string) string { return vmMark("someone", id, key) }},
	{"an unmarked object", "obj-u", func(string) string { return "" }},
	{"a path-like name", "../../x", func(string) string { return "" }},
}

// TestANameInStatusNeverLeadsTheKitToAnotherObject: a status forged to
// name an object the operator did not make for the key (another key's,
// another operator's, an unmarked one, one under a path-like name) never
// leads the kit to it: with Options.ExternalName the name is recomputed
// and the recorded one unused, the key's own object updated, deleted or
// unmarked; without it, the object named is neither updated, nor
// unmarked, nor deleted: a reconcile is terminal (ErrNotAdopted, Synced
// False, reason NotAdopted) and a deletion lets the resource go, whether
// Observe or List reads the marks back.
func TestANameInStatusNeverLeadsTheKitToAnotherObject(t *testing.T) {
	type world struct {
		n        naming
		markless bool
	}
	for _, w := range []world{{worldNames, false}, {worldNames, true}, {authorNames, false}, {noLookup, false}} {
		for _, f := range forgeries {
			if w.n == noLookup && f.mark("") == "" {
				continue // nothing tells whose it is: the package's Limits
			}
			for _, path := range []string{"update", "delete", "unmark"} {
				name := w.n.String()
				if w.markless {
					name += "ReadByList"
				}
				t.Run(name+"/"+f.what+"/"+path, func(t *testing.T) {
					forgedNameCase(t, w.n, w.markless, f, path)
				})
			}
		}
	}
}

func forgedNameCase(t *testing.T, n naming, readsNoMark bool, f forgery, path string) {
	e := newEnv(t, n)
	if readsNoMark {
		e.wrap = markless
	}
	if path == "unmark" {
		e.opts = func(o *external.Options[vmSpec, vmStatus]) {
			o.Reclaim = func(vmSpec) external.Reclaim { return external.Retain }
		}
	}
	e.put(2)
	require.NoError(t, e.settle())
	own := e.get().Value.Status.External.Name
	id, err := e.s.(store.Identifier).Identity(t.Context())
	require.NoError(t, err)
	victim := externaltest.Object[vmSpec]{Name: f.name, Spec: vmSpec{Size: 7}, Mark: f.mark(id)}
	e.fake.Put(victim)
	e.forgeName(victim.Name)

	if path == "update" {
		e.put(3)
		err = e.settle()
		if n == authorNames {
			require.NoError(t, err)
			e.fake.Edit(victim.Name, nil)
			e.requireOneObject(3)
			e.fake.Put(victim)
		} else {
			require.ErrorIs(t, err, external.ErrNotAdopted)
			require.ErrorIs(t, err, reconcile.ErrTerminal)
			c := e.condition(external.ConditionSynced)
			require.Equal(t, resource.ConditionFalse, c.Status)
			require.Equal(t, external.ReasonNotAdopted, c.Reason)
		}
	} else {
		e.del()
		require.NoError(t, e.settle())
		_, err = e.s.Get(t.Context(), key)
		require.ErrorIs(t, err, store.ErrNotFound)
		if n == authorNames {
			_, kept := objectNamed(e, own)
			require.Equal(t, path == "unmark", kept, "the key's own object is reclaimed")
		}
	}
	got, ok := objectNamed(e, victim.Name)
	require.True(t, ok, "not deleted")
	require.Equal(t, victim, got, "neither updated nor unmarked")
}

// objectNamed returns e's world's object named name, if any.
func objectNamed(e *env, name string) (externaltest.Object[vmSpec], bool) {
	for _, o := range e.fake.Objects() {
		if o.Name == name {
			return o, true
		}
	}
	return externaltest.Object[vmSpec]{}, false
}

// TestANameInStatusNeverNamesWhatTheKitCreates: a status forged, before
// any create, to name an object that does not exist (a path-like name)
// never becomes the name of what the kit creates: with
// Options.ExternalName the object is made under the name it chooses;
// without it, under the world's name; status records that name.
func TestANameInStatusNeverNamesWhatTheKitCreates(t *testing.T) {
	for _, n := range []naming{worldNames, authorNames, noLookup} {
		e := newEnv(t, n)
		e.put(2)
		e.forgeName("../../x")
		require.NoError(t, e.settle(), n)
		e.requireOneObject(2, n)
		require.NotEqual(t, "../../x", e.fake.Objects()[0].Name, n)
	}
}

// TestANameInStatusBesideACreateTheOperatorRecordedAdoptsNothing: where
// the world names objects, a status forged to name an unmarked object
// beside the ID of a create the operator's own record (Options.Creates)
// holds — a create cut short between the object and its mark — never
// adopts that object: only a name Options.ExternalName chooses is
// adopted unmarked.
func TestANameInStatusBesideACreateTheOperatorRecordedAdoptsNothing(t *testing.T) {
	dir := external.CreatesDir(t.TempDir())
	e := newEnv(t, worldNames)
	e.markApart = true
	e.opts = func(o *external.Options[vmSpec, vmStatus]) { o.Creates = dir }
	e.put(2)
	at := 0
	count := &externaltest.Faults{}
	probe := newEnv(t, worldNames)
	probe.markApart, probe.opts = true, func(o *external.Options[vmSpec, vmStatus]) { o.Creates = external.CreatesDir(t.TempDir()) }
	probe.put(2)
	require.NoError(t, converging(probe, count))
	for _, s := range count.Steps() {
		if s.Op == "create mark" {
			at = s.N
		}
	}
	require.ErrorIs(t, converging(e, &externaltest.Faults{At: at}), externaltest.ErrCrash)
	id := e.get().Value.Status.External.Creating
	require.NotEmpty(t, id)
	victim := externaltest.Object[vmSpec]{Name: "obj-u", Spec: vmSpec{Size: 7}}
	e.fake.Put(victim)
	obj := e.get()
	st := obj.Value.Status
	st.External = external.Record{Name: victim.Name, Creating: id}
	_, err := resource.WriteStatus(t.Context(), e.s, obj, st)
	require.NoError(t, err)

	require.ErrorIs(t, e.settle(), external.ErrNotAdopted)
	e.del()
	require.NoError(t, e.settle())
	got, ok := objectNamed(e, victim.Name)
	require.True(t, ok, "not deleted")
	require.Equal(t, victim, got, "neither updated nor marked")
}

// TestADeletionTheWorldWillNotObserveTouchesOnlyWhatListShowsIsTheOperators:
// a resource whose spec the world refuses even to observe, deleted while
// its status is forged (a create under way, a name), goes: its object is
// deleted if List shows it marked by the operator for the key, and any
// other object is left as it is.
func TestADeletionTheWorldWillNotObserveTouchesOnlyWhatListShowsIsTheOperators(t *testing.T) {
	for _, n := range []naming{worldNames, authorNames} {
		e := newEnv(t, n)
		e.wrap = func(w external.World[vmSpec, vmStatus]) external.World[vmSpec, vmStatus] {
			observe := w.Observe
			w.Observe = func(ctx context.Context, d external.Desired[vmSpec]) (external.Observation[vmStatus], error) {
				if d.Spec.Size < 0 {
					return external.Observation[vmStatus]{}, external.Reject(errors.New("not a size"))
				}
				return observe(ctx, d)
			}
			return w
		}
		e.put(2)
		require.NoError(t, e.settle(), n)
		own := e.get().Value.Status.External.Name
		victim := externaltest.Object[vmSpec]{Name: "obj-u", Spec: vmSpec{Size: 7}}
		e.fake.Put(victim)
		e.forgeCreating(victim.Name)
		e.put(-1)
		e.del()
		require.NoError(t, e.settle(), n)
		_, err := e.s.Get(t.Context(), key)
		require.ErrorIs(t, err, store.ErrNotFound, n)
		_, kept := objectNamed(e, own)
		require.Equal(t, n == worldNames, kept, "%v: the key's own object deleted only where its name is chosen", n)
		got, ok := objectNamed(e, victim.Name)
		require.True(t, ok, n)
		require.Equal(t, victim, got, n)
	}
}
