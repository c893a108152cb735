package externaltest

import (
	"errors"
	"testing"

	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// SuiteSpec and SuiteStatus are the resource the suite reconciles.
type (
	SuiteSpec   struct{ Size int }
	SuiteStatus struct {
		External external.Record `json:"external"`
	}
	// SuiteResource is what the suite's stores hold.
	SuiteResource = resource.Resource[SuiteSpec, SuiteStatus]
)

// Naming is how the suite's external objects get their names.
type Naming int

const (
	// WorldNames: the world names objects; List looks them up.
	WorldNames Naming = iota
	// AuthorNames: Options.ExternalName names them before the create.
	AuthorNames
	// NoLookup: the world names them and offers no List.
	NoLookup
	// MarkApart: as AuthorNames, but the world's create stores the mark
	// in a step of its own (FakeOptions.MarkApart), and the operator
	// records its creates in a directory of its own (external.CreatesDir).
	MarkApart
)

func (n Naming) String() string {
	return [...]string{"WorldNames", "AuthorNames", "NoLookup", "MarkApart"}[n]
}

const suiteKey = "vms/a"

// suiteEnv is one trial's store (with the layer) and world.
type suiteEnv struct {
	s      store.Store[*SuiteResource]
	fake   *Fake[SuiteSpec]
	naming Naming
	dir    string // the operator's own directory (MarkApart)
}

// Run runs the kit's crash clauses over stores newStore makes (a fresh
// one per trial; the suite puts the API-server layer over it): a crash
// before or after any step of a create leaves exactly one object, made
// once, without a person where the world can be looked up; of a delete,
// neither the object nor the resource. A backend runs it from its tests,
// as it runs store/storetest.
func Run(t *testing.T, newStore func(t *testing.T) store.Store[*SuiteResource]) {
	fresh := func(t *testing.T, n Naming) *suiteEnv {
		s, err := apistore.New(newStore(t), resource.Kind[SuiteSpec, SuiteStatus]{})
		if err != nil {
			t.Fatalf("apistore.New: %v", err)
		}
		return &suiteEnv{s: s, fake: NewFake[SuiteSpec](), naming: n, dir: t.TempDir()}
	}
	for _, n := range []Naming{WorldNames, AuthorNames, MarkApart} {
		t.Run("CrashAtEveryStepOfACreate/"+n.String(), func(t *testing.T) {
			EveryCrash(t, func(t *testing.T, f *Faults) (func(*testing.T), error) {
				e := fresh(t, n)
				e.put(t, 2)
				err := e.settle(t, f)
				return func(t *testing.T) {
					e.mustSettle(t)
					e.requireOne(t, 2)
				}, err
			})
		})
	}
	for _, n := range []Naming{WorldNames, AuthorNames, NoLookup, MarkApart} {
		t.Run("CrashAtEveryStepOfADelete/"+n.String(), func(t *testing.T) {
			EveryCrash(t, func(t *testing.T, f *Faults) (func(*testing.T), error) {
				e := fresh(t, n)
				e.put(t, 2)
				e.mustSettle(t)
				e.del(t)
				err := e.settle(t, f)
				return func(t *testing.T) {
					e.mustSettle(t)
					if objs := e.fake.Objects(); len(objs) != 0 {
						t.Fatalf("objects left: %v", objs)
					}
					if _, err := e.s.Get(t.Context(), suiteKey); !errors.Is(err, store.ErrNotFound) {
						t.Fatalf("the resource is left: %v", err)
					}
				}, err
			})
		})
	}
}

// kit returns the kit of e, a process just started, its steps through f.
func (e *suiteEnv) kit(t *testing.T, f *Faults) (*external.Reconciler[SuiteSpec, SuiteStatus], store.Store[*SuiteResource]) {
	opts := external.Options[SuiteSpec, SuiteStatus]{Name: "suiteop", Prefix: "vms/",
		Record: func(st *SuiteStatus) *external.Record { return &st.External }}
	if e.naming == AuthorNames || e.naming == MarkApart {
		opts.ExternalName = func(key string, _ SuiteSpec) string { return "vm-" + key[len("vms/"):] }
	}
	fo := FakeOptions[SuiteSpec, SuiteStatus]{NoList: e.naming == NoLookup}
	if e.naming == MarkApart {
		opts.Creates = external.CreatesDir(e.dir)
		fo.MarkApart, fo.Faults = true, f
	}
	w := Client(e.fake, fo)
	fs := Store[*SuiteResource]{Store: e.s, F: f}
	r, err := external.New(fs, WithFaults(f, w), opts)
	if err != nil {
		t.Fatalf("external.New: %v", err)
	}
	return r, fs
}

func (e *suiteEnv) settle(t *testing.T, f *Faults) error {
	r, s := e.kit(t, f)
	return Settle(t.Context(), r, s, suiteKey, 20)
}

func (e *suiteEnv) mustSettle(t *testing.T) {
	t.Helper()
	if err := e.settle(t, &Faults{}); err != nil {
		t.Fatalf("%v: settle: %v", e.naming, err)
	}
}

func (e *suiteEnv) put(t *testing.T, size int) {
	t.Helper()
	if _, err := resource.PutSpec(t.Context(), e.s, suiteKey, SuiteSpec{Size: size}); err != nil {
		t.Fatalf("PutSpec: %v", err)
	}
}

func (e *suiteEnv) del(t *testing.T) {
	t.Helper()
	obj, err := e.s.Get(t.Context(), suiteKey)
	if err == nil {
		_, err = e.s.Delete(t.Context(), suiteKey, obj.Revision)
	}
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
}

// requireOne checks that the world holds one object, made once, marked
// for the key, of size, named in the resource's status.
func (e *suiteEnv) requireOne(t *testing.T, size int) {
	t.Helper()
	objs := e.fake.Objects()
	obj, err := e.s.Get(t.Context(), suiteKey)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	m, marked := markOf(objs)
	rec := obj.Value.Status.External
	ready, _ := resource.FindCondition(obj.Value.Conditions, external.ConditionReady)
	switch {
	case len(objs) != 1 || e.fake.Made() != 1:
		t.Fatalf("%v: %d objects, %d made: %v", e.naming, len(objs), e.fake.Made(), objs)
	case !marked || m.Key != suiteKey || objs[0].Spec.Size != size:
		t.Fatalf("%v: object %+v", e.naming, objs[0])
	case rec.Name != objs[0].Name || rec.Creating != "":
		t.Fatalf("%v: record %+v for object %s", e.naming, rec, objs[0].Name)
	case ready.Status != resource.ConditionTrue:
		t.Fatalf("%v: Ready %+v", e.naming, ready)
	}
}

// markOf reads the mark of the first of objs.
func markOf[Spec any](objs []Object[Spec]) (external.Mark, bool) {
	if len(objs) == 0 {
		return external.Mark{}, false
	}
	return external.ParseMark(objs[0].Mark)
}
