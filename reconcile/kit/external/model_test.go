package external_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/store"
)

// TestRandomHistoriesWithCrashesNeverLeakNorDuplicate: over random
// histories of spec changes (refused ones included), deletions and
// recreations, hand edits and crashes at random steps, the world never
// holds two objects for the key, and once settled holds exactly the
// desired one, or none once the key is gone.
func TestRandomHistoriesWithCrashesNeverLeakNorDuplicate(t *testing.T) {
	for seed := range uint64(20) {
		for _, n := range []naming{worldNames, authorNames} {
			randomHistory(t, n, rand.New(rand.NewPCG(seed, 7)))
		}
	}
}

func randomHistory(t *testing.T, n naming, rng *rand.Rand) {
	e := newEnv(t, n)
	exists := false
	var log []string
	for range 30 {
		switch op := rng.IntN(5); {
		case op <= 1:
			size := rng.IntN(4) - 1 // -1 is refused
			e.put(size)
			exists = true
			log = append(log, fmt.Sprint("put ", size))
		case op == 2 && exists:
			e.del()
			log = append(log, "delete")
		case op == 3:
			if objs := e.fake.Objects(); len(objs) > 0 {
				o := objs[rng.IntN(len(objs))]
				if rng.IntN(2) == 0 {
					e.fake.Edit(o.Name, nil)
				} else {
					e.fake.Edit(o.Name, &vmSpec{Size: 7})
				}
				log = append(log, "hand edit "+o.Name)
			}
		}
		f := &externaltest.Faults{At: 1 + rng.IntN(8), After: rng.IntN(2) == 0}
		_ = converging(e, f)
		log = append(log, fmt.Sprintf("crash at %d after %v: %v", f.At, f.After, f.Crashed()))
		requireAtMostOnePerKey(t, e, fmt.Sprint(n, log))
		_, err := e.s.Get(t.Context(), key)
		exists = err == nil
	}
	err := e.settle()
	if errors.Is(err, external.ErrRejected) {
		e.put(1)
		err = e.settle()
	}
	require.NoError(t, err, n, log)
	requireAtMostOnePerKey(t, e, fmt.Sprint(n, log))
	obj, err := e.s.Get(t.Context(), key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		require.Empty(t, e.fake.Objects(), n, log)
	default:
		require.NoError(t, err)
		e.requireOneObject(obj.Value.Spec.Size, n, log)
	}
}

// requireAtMostOnePerKey checks that no two objects are marked for one key.
func requireAtMostOnePerKey(t *testing.T, e *env, msg string) {
	seen := map[string]string{}
	for _, o := range e.fake.Objects() {
		m, ok := external.ParseMark(o.Mark)
		if !ok {
			continue
		}
		require.Empty(t, seen[m.Key], "%s: %s and %s for %s", msg, seen[m.Key], o.Name, m.Key)
		seen[m.Key] = o.Name
	}
}
