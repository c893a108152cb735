package external_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

type vmSpec struct {
	Size int
	Zone string `json:",omitempty"`
}

type vmStatus struct {
	External external.Record `json:"external"`
	Size     int             `json:"size"`
}

type vm = resource.Resource[vmSpec, vmStatus]

const key = "vms/a"

// naming says how external objects get their names.
type naming int

const (
	worldNames  naming = iota // the world names them; List looks them up
	authorNames               // Options.ExternalName names them
	noLookup                  // the world names them and offers no List
)

func (n naming) String() string { return [...]string{"worldNames", "authorNames", "noLookup"}[n] }

// env is a store and a fake world, and how to make a reconciler of them
// with faults: each call of kit is a fresh process.
type env struct {
	t      *testing.T
	s      store.Store[*vm] // the store, without faults
	fake   *externaltest.Fake[vmSpec]
	naming naming
	opts   func(*external.Options[vmSpec, vmStatus])
	// markApart: the world's create stores the mark in a step of its own.
	markApart bool
	// wrap, if set, changes the fake's World.
	wrap func(external.World[vmSpec, vmStatus]) external.World[vmSpec, vmStatus]
}

func newEnv(t *testing.T, n naming) *env {
	s, err := apistore.New(store.NewMemory[*vm](), resource.Kind[vmSpec, vmStatus]{})
	require.NoError(t, err)
	return &env{t: t, s: s, fake: externaltest.NewFake[vmSpec](), naming: n}
}

func (e *env) options() external.Options[vmSpec, vmStatus] {
	o := external.Options[vmSpec, vmStatus]{
		Name: "vmop", Prefix: "vms/",
		Record: func(st *vmStatus) *external.Record { return &st.External },
	}
	if e.naming == authorNames {
		o.ExternalName = func(key string, _ vmSpec) string { return "vm-" + key[len("vms/"):] }
	}
	if e.opts != nil {
		e.opts(&o)
	}
	return o
}

// kit returns a reconciler of e, as a process just started, whose steps
// go through f, and the store it writes through.
func (e *env) kit(f *externaltest.Faults) (*external.Reconciler[vmSpec, vmStatus], store.Store[*vm]) {
	w := externaltest.Client(e.fake, externaltest.FakeOptions[vmSpec, vmStatus]{
		NoList: e.naming == noLookup, MarkApart: e.markApart, Faults: f,
		Status: func(o externaltest.Object[vmSpec]) vmStatus { return vmStatus{Size: o.Spec.Size} },
		Reject: func(s vmSpec) error {
			if s.Size < 0 {
				return fmt.Errorf("size %d is not offered", s.Size)
			}
			return nil
		},
	})
	if e.wrap != nil {
		w = e.wrap(w)
	}
	fs := externaltest.Store[*vm]{Store: e.s, F: f}
	r, err := external.New(fs, externaltest.WithFaults(f, w), e.options())
	require.NoError(e.t, err)
	return r, fs
}

// settle reconciles key with a fresh process without faults until it
// settles.
func (e *env) settle() error {
	r, s := e.kit(&externaltest.Faults{})
	return externaltest.Settle(e.t.Context(), r, s, key, 20)
}

// put writes key's spec.
func (e *env) put(size int) {
	_, err := resource.PutSpec(e.t.Context(), e.s, key, vmSpec{Size: size})
	require.NoError(e.t, err)
}

// del deletes key (a mark, while it has the kit's finalizer).
func (e *env) del() {
	obj, err := e.s.Get(e.t.Context(), key)
	require.NoError(e.t, err)
	_, err = e.s.Delete(e.t.Context(), key, obj.Revision)
	require.NoError(e.t, err)
}

// get returns key's object.
func (e *env) get() store.Object[*vm] {
	obj, err := e.s.Get(e.t.Context(), key)
	require.NoError(e.t, err)
	return obj
}

// condition returns key's condition of type ct.
func (e *env) condition(ct string) resource.Condition {
	c, _ := resource.FindCondition(e.get().Value.Conditions, ct)
	return c
}

// requireOneObject checks that the world holds exactly one object, marked
// for key, of size, named in key's status.
func (e *env) requireOneObject(size int, msg ...any) {
	objs := e.fake.Objects()
	require.Len(e.t, objs, 1, msg...)
	m, ok := external.ParseMark(objs[0].Mark)
	require.True(e.t, ok, msg...)
	require.Equal(e.t, key, m.Key, msg...)
	require.Equal(e.t, size, objs[0].Spec.Size, msg...)
	obj := e.get()
	require.Equal(e.t, objs[0].Name, obj.Value.Status.External.Name, msg...)
	require.Empty(e.t, obj.Value.Status.External.Creating, msg...)
	require.Equal(e.t, resource.ConditionTrue, e.condition(external.ConditionReady).Status, msg...)
}
