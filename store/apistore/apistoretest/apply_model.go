package apistoretest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/stretchr/testify/require"
)

// applyModel is what the contract says one key holds, written from the
// package doc and Apply's rule, not from the layer's code.
type applyModel struct {
	exists bool
	marked bool
	gen    int64
	spec   *int // {"n":spec}; nil: no spec
	status *int // {"s":status}; nil: no status
	fins   []string
	owners []apistore.Owner
}

// applyRun is one randomized run: controllers add and remove finalizers
// and owners and write status, users apply documents with and without
// metadata and spec, and delete; after each step the store holds what the
// model says.
type applyRun struct {
	t     *testing.T
	s     *subject
	rng   *rand.Rand
	m     applyModel
	trace []string
}

// The names controllers and users use. "owners/shared" is set by a
// controller and named by users too.
var (
	ctlFinalizers  = []string{"ctl/a", "ctl/b"}
	userFinalizers = []string{"user/x", "user/y", "ctl/a"}
	ctlOwners      = []string{"owners/a", "owners/shared"}
	userOwners     = []string{"owners/u", "owners/shared"}
)

func applyKeepsWhatControllersSet(t *testing.T, s *subject) {
	for seed := range uint64(3) {
		r := &applyRun{t: t, s: s, rng: rand.New(rand.NewPCG(seed, seed))}
		key := fmt.Sprintf("model/%d", seed)
		for range 60 {
			r.step(key)
			r.check(key)
		}
	}
}

// step makes one random change of key, through the layer, and to the
// model.
func (r *applyRun) step(key string) {
	switch n := r.rng.IntN(10); {
	case n < 4:
		r.userApply(key)
	case n < 8:
		r.controllerWrite(key)
	case n < 9 && r.m.exists:
		obj, _ := get(r.t, r.s, key)
		_, marked, err := r.s.layer.DeleteWith(r.t.Context(), key, obj.Revision, apistore.Background)
		require.NoError(r.t, err, "%v", r.trace)
		r.note("delete")
		if !marked {
			r.m = applyModel{}
			return
		}
		r.m.marked = true
	case r.m.exists:
		obj, _ := get(r.t, r.s, key)
		st := r.rng.IntN(100)
		_, err := r.s.layer.UpdateStatus(r.t.Context(), key, doc(nil, "", fmt.Sprintf(`{"s":%d}`, st)), obj.Revision)
		require.NoError(r.t, err, "%v", r.trace)
		r.note("status %d", st)
		r.m.status = &st
	}
}

func (r *applyRun) note(format string, args ...any) {
	r.trace = append(r.trace, fmt.Sprintf(format, args...))
}

// pick returns each of names with probability one half.
func (r *applyRun) pick(names []string) []string {
	var out []string
	for _, n := range names {
		if r.rng.IntN(2) == 0 {
			out = append(out, n)
		}
	}
	return out
}

// userApply applies a random document: with or without metadata (naming
// some finalizers and owners), with or without a spec and a status.
func (r *applyRun) userApply(key string) {
	var md *apistore.Meta
	if r.rng.IntN(2) == 0 {
		md = &apistore.Meta{Finalizers: r.pick(userFinalizers)}
		for _, o := range r.pick(userOwners) {
			md.Owners = append(md.Owners, apistore.Owner{Key: o, UID: int64(1 + r.rng.IntN(3))})
		}
	}
	var spec *int
	specText := ""
	if r.rng.IntN(4) > 0 {
		n := r.rng.IntN(3)
		spec, specText = &n, fmt.Sprintf(`{"n":%d}`, n)
	}
	d := doc(md, specText, `{"s":-1}`)
	r.note("apply %s", d)
	existed, before := r.m.exists, r.m
	_, err := r.s.layer.Apply(r.t.Context(), key, d)
	want := r.m.applied(md, spec)
	if want == nil {
		requireIs(r.t, err, fmt.Sprintf("%v: an apply adding a finalizer to a marked object", r.trace), apistore.ErrDeleting, store.ErrInvalid)
		return
	}
	require.NoError(r.t, err, "%v", r.trace)
	r.m = *want
	obj, p := get(r.t, r.s, key) // fails if the apply deleted it
	require.Equal(r.t, obj.Key, key)
	if existed {
		for _, f := range before.fins {
			require.Contains(r.t, p.Meta.Finalizers, f, "%v: an apply removed a finalizer", r.trace)
		}
		for _, o := range before.owners {
			require.True(r.t, slices.ContainsFunc(p.Meta.Owners, func(g apistore.Owner) bool { return g.Key == o.Key }),
				"%v: an apply removed owner %q", r.trace, o.Key)
		}
	}
}

// applied returns the model after an apply of a document with metadata md
// (nil: none) and spec (nil: none), or nil if the apply must be refused.
func (m applyModel) applied(md *apistore.Meta, spec *int) *applyModel {
	if md == nil {
		md = &apistore.Meta{}
	}
	if !m.exists {
		return &applyModel{exists: true, gen: 1, spec: spec, fins: md.Finalizers, owners: md.Owners}
	}
	next := m
	next.fins = slices.Clone(m.fins)
	for _, f := range md.Finalizers {
		if !slices.Contains(next.fins, f) {
			if m.marked {
				return nil
			}
			next.fins = append(next.fins, f)
		}
	}
	next.owners = setOwners(m.owners, md.Owners...)
	if spec != nil {
		if m.spec == nil || *m.spec != *spec {
			next.gen++
		}
		next.spec = spec
	}
	return &next
}

// setOwners returns owners with each of set replacing the owner of its
// key, or added after them.
func setOwners(owners []apistore.Owner, set ...apistore.Owner) []apistore.Owner {
	out := slices.Clone(owners)
	for _, o := range set {
		if i := slices.IndexFunc(out, func(g apistore.Owner) bool { return g.Key == o.Key }); i >= 0 {
			out[i] = o
		} else {
			out = append(out, o)
		}
	}
	return out
}

// controllerWrite adds or removes one of the controllers' finalizers or
// owners, with an Update of the whole object, as a controller does.
func (r *applyRun) controllerWrite(key string) {
	if !r.m.exists {
		return
	}
	next := r.m
	next.fins, next.owners = slices.Clone(r.m.fins), slices.Clone(r.m.owners)
	f := ctlFinalizers[r.rng.IntN(len(ctlFinalizers))]
	o := ctlOwners[r.rng.IntN(len(ctlOwners))]
	switch r.rng.IntN(4) {
	case 0:
		if r.m.marked || slices.Contains(next.fins, f) {
			return
		}
		next.fins = append(next.fins, f)
	case 1:
		next.fins = slices.DeleteFunc(next.fins, func(g string) bool { return g == f })
	case 2:
		next.owners = setOwners(next.owners, apistore.Owner{Key: o, UID: int64(1 + r.rng.IntN(3))})
	default:
		next.owners = slices.DeleteFunc(next.owners, func(g apistore.Owner) bool { return g.Key == o })
	}
	obj, _ := get(r.t, r.s, key)
	v := r.m.value(next.fins, next.owners)
	r.note("controller writes %s", v)
	_, deleted, err := r.s.layer.Replace(r.t.Context(), key, v, obj.Revision)
	require.NoError(r.t, err, "%v", r.trace)
	if deleted {
		require.True(r.t, r.m.marked && len(next.fins) == 0, "%v: only the removal of a marked object's last finalizer deletes", r.trace)
		r.m = applyModel{}
		return
	}
	r.m = next
}

// value is the model's object with finalizers fins and owners.
func (m applyModel) value(fins []string, owners []apistore.Owner) json.RawMessage {
	spec := ""
	if m.spec != nil {
		spec = fmt.Sprintf(`{"n":%d}`, *m.spec)
	}
	return doc(&apistore.Meta{Finalizers: fins, Owners: owners}, spec, "")
}

// check requires key to hold what the model says.
func (r *applyRun) check(key string) {
	t := r.t
	t.Helper()
	obj, err := r.s.layer.Get(t.Context(), key)
	if !r.m.exists {
		requireIs(t, err, fmt.Sprintf("%v: Get of a key the model has deleted", r.trace), store.ErrNotFound)
		return
	}
	require.NoError(t, err, "%v", r.trace)
	p := parse(t, obj.Value)
	require.Equal(t, r.m.gen, p.Meta.Generation, "%v: generation", r.trace)
	require.Equal(t, r.m.marked, p.Meta.Deleting(), "%v: mark", r.trace)
	require.Equal(t, norm(r.m.fins), norm(p.Meta.Finalizers), "%v: finalizers", r.trace)
	require.Equal(t, norm(r.m.owners), norm(p.Meta.Owners), "%v: owners", r.trace)
	require.Equal(t, modelJSON(t, r.m.spec, "n"), p.Spec, "%v: spec", r.trace)
	require.Equal(t, modelJSON(t, r.m.status, "s"), p.Status, "%v: status", r.trace)
	require.Empty(t, p.Others, "%v: members besides metadata, spec and status", r.trace)
}

// norm returns nil for an empty slice, so that none and [] compare equal.
func norm[E any](s []E) []E {
	if len(s) == 0 {
		return nil
	}
	return s
}

// modelJSON is {"name":n} as parse decodes it, or nil for no member.
func modelJSON(t *testing.T, n *int, name string) any {
	if n == nil {
		return nil
	}
	return jsonOf(t, fmt.Sprintf(`{%q:%d}`, name, *n))
}
