package external_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// TestRandomHistoriesWithCrashesNeverLeakNorDuplicate: over random
// histories of spec changes (refused ones included), deletions and
// recreations, hand edits, crashes at random steps, and status forged by
// a token holder (a record naming another key's object, another
// operator's, an unmarked one, a path-like name, or a create under way),
// no object the operator did not make for the key is ever updated,
// unmarked or deleted, the world never holds two objects for the key,
// and once settled (a person clearing a forged name the kit refused)
// holds exactly the desired one, or, once the key is gone, none but what
// a forged name hid from the kit, marked for prune.
func TestRandomHistoriesWithCrashesNeverLeakNorDuplicate(t *testing.T) {
	for seed := range uint64(20) {
		for _, n := range []naming{worldNames, authorNames} {
			randomHistory(t, n, rand.New(rand.NewPCG(seed, 7)))
		}
	}
}

// history is one random history: its env, the objects others made
// (bystanders, which nothing may touch), and what happened.
type history struct {
	t         *testing.T
	e         *env
	rng       *rand.Rand
	bystander map[string]externaltest.Object[vmSpec]
	forged    bool
	log       []string
}

func randomHistory(t *testing.T, n naming, rng *rand.Rand) {
	e := newEnv(t, n)
	h := &history{t: t, e: e, rng: rng, bystander: map[string]externaltest.Object[vmSpec]{}}
	id, err := e.s.(store.Identifier).Identity(t.Context())
	require.NoError(t, err)
	for _, f := range forgeries {
		o := externaltest.Object[vmSpec]{Name: f.name, Spec: vmSpec{Size: 7}, Mark: f.mark(id)}
		e.fake.Put(o)
		h.bystander[o.Name] = o
	}
	exists := false
	for range 30 {
		h.step(exists)
		f := &externaltest.Faults{At: 1 + rng.IntN(8), After: rng.IntN(2) == 0}
		_ = converging(e, f)
		h.log = append(h.log, fmt.Sprintf("crash at %d after %v: %v", f.At, f.After, f.Crashed()))
		h.check(fmt.Sprint(n, h.log))
		_, err := e.s.Get(t.Context(), key)
		exists = err == nil
	}
	h.settle()
	msg := fmt.Sprint(n, h.log)
	h.check(msg)
	for name := range h.bystander {
		e.fake.Edit(name, nil)
	}
	obj, err := e.s.Get(t.Context(), key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		for _, o := range e.fake.Objects() {
			m, _ := external.ParseMark(o.Mark)
			require.True(t, h.forged && m.Owner == "vmop" && m.Key == key, "%s: %s left", msg, o.Name)
		}
	default:
		require.NoError(t, err)
		e.requireOneObject(obj.Value.Spec.Size, msg)
	}
}

// step makes one random change: a spec, a deletion, a hand edit of an
// object the operator made, or a forged status.
func (h *history) step(exists bool) {
	e, rng := h.e, h.rng
	switch op := rng.IntN(6); {
	case op <= 1:
		size := rng.IntN(4) - 1 // -1 is refused
		e.put(size)
		h.log = append(h.log, fmt.Sprint("put ", size))
	case op == 2 && exists:
		e.del()
		h.log = append(h.log, "delete")
	case op == 3:
		var objs []externaltest.Object[vmSpec]
		for _, o := range e.fake.Objects() {
			if _, ok := h.bystander[o.Name]; !ok {
				objs = append(objs, o)
			}
		}
		if len(objs) > 0 {
			o := objs[rng.IntN(len(objs))]
			if rng.IntN(2) == 0 {
				e.fake.Edit(o.Name, nil)
			} else {
				e.fake.Edit(o.Name, &vmSpec{Size: 7})
			}
			h.log = append(h.log, "hand edit "+o.Name)
		}
	case op == 4 && exists:
		h.forge()
	}
}

// forge writes key's status record as a token holder may: a random
// name (a bystander's, one of the world's, path-like, none), with or
// without a create under way.
func (h *history) forge() {
	names := []string{"", "../../x"}
	for _, o := range h.e.fake.Objects() {
		names = append(names, o.Name)
	}
	obj := h.e.get()
	st := obj.Value.Status
	rec := external.Record{Name: names[h.rng.IntN(len(names))]}
	switch h.rng.IntN(3) {
	case 1:
		rec.Creating = "forged"
	case 2:
		rec.Creating = st.External.Creating
	}
	st.External = rec
	_, err := resource.WriteStatus(h.t.Context(), h.e.s, obj, st)
	require.NoError(h.t, err)
	h.forged = true
	h.log = append(h.log, fmt.Sprintf("forge %+v", rec))
}

// check checks the invariants that hold after every step: the
// bystanders are as they were, and no two objects are marked for a key.
func (h *history) check(msg string) {
	for name, want := range h.bystander {
		got, ok := objectNamed(h.e, name)
		require.True(h.t, ok, "%s: %s deleted", msg, name)
		require.Equal(h.t, want, got, "%s: %s updated or unmarked", msg, name)
	}
	requireAtMostOnePerKey(h.t, h.e, msg)
}

// settle settles the key, as a person would: a refused spec is
// corrected, a forged name the kit refused is cleared from status.
func (h *history) settle() {
	var err error
	for range 3 {
		err = h.e.settle()
		switch {
		case errors.Is(err, external.ErrRejected):
			h.e.put(1)
		case errors.Is(err, external.ErrNotAdopted):
			h.e.forgeName("")
		default:
			require.NoError(h.t, err, h.log)
			return
		}
		h.log = append(h.log, fmt.Sprint("a person answers ", err))
	}
	require.NoError(h.t, err, h.log)
}

// requireAtMostOnePerKey checks that no two objects are marked for one
// key by one operator.
func requireAtMostOnePerKey(t *testing.T, e *env, msg string) {
	seen := map[external.Mark]string{}
	for _, o := range e.fake.Objects() {
		m, ok := external.ParseMark(o.Mark)
		if !ok {
			continue
		}
		m.Create = ""
		require.Empty(t, seen[m], "%s: %s and %s for %s", msg, seen[m], o.Name, m.Key)
		seen[m] = o.Name
	}
}
