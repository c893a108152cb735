package external_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/drift"
	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/reconcile/kit/prune"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// operator is a controller running the kit over e, and its pruner.
type operator struct {
	c *reconcile.Controller[*vm]
	p *prune.Pruner[*vm]
}

func (e *env) operator() operator {
	e.opts = func(o *external.Options[vmSpec, vmStatus]) {
		o.Drift = drift.Options{Interval: 10 * time.Second}
		o.Prune = prune.Options{Interval: time.Minute}
	}
	r, _ := e.kit(&externaltest.Faults{})
	c, err := reconcile.New(e.s, r, reconcile.Options[*vm]{Name: "vms", Prefix: "vms/",
		Sources: r.Sources(), Dependencies: r.Dependencies()})
	require.NoError(e.t, err)
	p, err := r.Pruner(c)
	require.NoError(e.t, err)
	return operator{c: c, p: p}
}

// run runs op until the returned stop is called.
func (op operator) run(t *testing.T) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 2)
	go func() { done <- op.c.Run(ctx) }()
	go func() { done <- op.p.Run(ctx) }()
	return func() {
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, <-done)
	}
}

// caughtUp waits until op has reconciled every change of e's store.
func (e *env) caughtUp(op operator) {
	synctest.Wait()
	rev, err := e.s.Revision(e.t.Context())
	require.NoError(e.t, err)
	require.NoError(e.t, op.c.WaitForRevision(e.t.Context(), rev))
	synctest.Wait()
}

// TestDriftMadeByHandIsPutBack: an object changed by hand, then one
// removed by hand, is put back by the next drift poll, with no store
// event to wake it.
func TestDriftMadeByHandIsPutBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, worldNames)
		op := e.operator()
		defer op.run(t)()
		e.put(2)
		e.caughtUp(op)
		e.requireOneObject(2)
		name := e.fake.Objects()[0].Name

		require.True(t, e.fake.Edit(name, &vmSpec{Size: 9}))
		<-time.After(11 * time.Second)
		synctest.Wait()
		e.requireOneObject(2, "changed by hand")

		require.True(t, e.fake.Edit(name, nil))
		<-time.After(11 * time.Second)
		synctest.Wait()
		e.requireOneObject(2, "removed by hand")
		require.Equal(t, 2, e.fake.Made())
	})
}

// TestAnObjectNoLongerDesiredIsPrunedAndNoOtherIs: an object this
// operator marked from this store for a key that is gone is deleted; one
// of another owner, one from another store, one unmarked and the desired
// one are kept.
func TestAnObjectNoLongerDesiredIsPrunedAndNoOtherIs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, worldNames)
		id, err := e.s.(store.Identifier).Identity(t.Context())
		require.NoError(t, err)
		mark := func(owner, st, k string) string {
			return external.Mark{Mark: prune.Mark{Owner: owner, Store: st}, Key: k, Create: "x"}.String()
		}
		e.fake.Put(externaltest.Object[vmSpec]{Name: "gone", Mark: mark("vmop", id, "vms/gone")})
		e.fake.Put(externaltest.Object[vmSpec]{Name: "theirs", Mark: mark("other", id, "vms/gone")})
		e.fake.Put(externaltest.Object[vmSpec]{Name: "old", Mark: mark("vmop", "memory:OLD", "vms/gone")})
		e.fake.Put(externaltest.Object[vmSpec]{Name: "hand"})
		e.put(2)
		op := e.operator()
		defer op.run(t)()
		e.caughtUp(op)
		pass, ran := op.p.Last()
		require.True(t, ran)
		require.NoError(t, pass.Err)
		var names []string
		for _, o := range e.fake.Objects() {
			names = append(names, o.Name)
		}
		require.ElementsMatch(t, []string{"theirs", "old", "hand", e.get().Value.Status.External.Name}, names)
	})
}

// TestAnUnmarkedObjectItManagesIsPolledLikeTheOthersAndNeverAdopted: an
// object that existed, unmarked, under the name the kit chooses for a key
// is managed as it is: no poll wakes its key while it is unchanged, a
// hand change to it is put back by the next poll, and it is never marked
// (adopted as made by the operator), so neither prune nor a person's
// reading of marks takes it for the operator's.
func TestAnUnmarkedObjectItManagesIsPolledLikeTheOthersAndNeverAdopted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, authorNames)
		e.fake.Put(externaltest.Object[vmSpec]{Name: "vm-a", Spec: vmSpec{Size: 2}})
		e.put(2)
		op := e.operator()
		defer op.run(t)()
		e.caughtUp(op)
		observed := e.fake.Calls("observe")

		<-time.After(5*driftInterval + time.Second)
		synctest.Wait()
		require.Equal(t, observed, e.fake.Calls("observe"), "five polls of an unchanged object woke its key")

		require.True(t, e.fake.Edit("vm-a", &vmSpec{Size: 9}))
		<-time.After(driftInterval + time.Second)
		synctest.Wait()
		objs := e.fake.Objects()
		require.Len(t, objs, 1)
		require.Equal(t, externaltest.Object[vmSpec]{Name: "vm-a", Spec: vmSpec{Size: 2}}, objs[0], "put back, unmarked")
		require.Zero(t, e.fake.Made())
		require.Equal(t, resource.ConditionTrue, e.condition(external.ConditionReady).Status)

		<-time.After(2 * time.Minute) // two prune passes
		synctest.Wait()
		require.Equal(t, []externaltest.Object[vmSpec]{{Name: "vm-a", Spec: vmSpec{Size: 2}}}, e.fake.Objects())
	})
}
