package owners_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/owners"
	"github.com/converge-go/converge/store/apistore"
)

// model says which objects of a snapshot remain once every deletion it
// shows has been carried out. An object goes if it is marked, or if it
// names owners and every one it names goes, once the references to owners
// orphaning it are set aside (which leave it owned by no one, and stay
// with it). An owner goes if it is absent, another object (another UID)
// or going itself.
type model struct {
	objs  map[string]snap
	going map[string]bool
}

func newModel(objs map[string]snap) *model {
	return &model{objs: objs, going: make(map[string]bool, len(objs))}
}

// remaining returns the keys that stay, sorted.
func (md *model) remaining() []string {
	keys := []string{}
	for key := range md.objs {
		if !md.goes(key) {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return keys
}

// goes reports whether key's object goes. References with the owner's UID
// point to older objects only, so the recursion ends.
func (md *model) goes(key string) bool {
	if g, ok := md.going[key]; ok {
		return g
	}
	o := md.objs[key]
	g := o.meta.Deleting() || md.collected(o.meta.Owners)
	md.going[key] = g
	return g
}

// collected reports whether an object naming refs is collected.
func (md *model) collected(refs []apistore.Owner) bool {
	var rest []apistore.Owner
	for _, r := range refs {
		if owner, ok := md.owner(r); ok && owner.meta.Deleting() && owner.meta.HasFinalizer(apistore.OrphanFinalizer) {
			continue
		}
		rest = append(rest, r)
	}
	if len(rest) == 0 {
		return false
	}
	for _, r := range rest {
		if _, ok := md.owner(r); ok && !md.goes(r.Key) {
			return false
		}
	}
	return true
}

// owner returns the object r names, if the snapshot has it.
func (md *model) owner(r apistore.Owner) (snap, bool) {
	o, ok := md.objs[r.Key]
	return o, ok && o.uid == r.UID
}

// forest is one run of the randomized test: objects created with up to
// two random owners among those there, random deletions in every mode,
// owners deleted and created again, pauses for the collector to act, and
// restarts of it, all while it runs.
type forest struct {
	t     *testing.T
	w     world
	rng   *rand.Rand
	run   *running
	next  int
	modes []apistore.Propagation
}

func (f *forest) step() {
	switch n := f.rng.IntN(20); {
	case n < 9:
		f.w.create(f.t, f.newKey(), nil, f.owners()...)
	case n < 14:
		if key, ok := f.pick(); ok {
			f.w.removeIfThere(f.t, key, f.modes[f.rng.IntN(len(f.modes))])
		}
	case n < 16:
		// An owner deleted and created again under its key, the new one
		// owned at random.
		if key, ok := f.pick(); ok && !f.w.removeIfThere(f.t, key, apistore.Background) && !has(f.t, f.w, key) {
			f.w.create(f.t, key, nil, f.owners()...)
		}
	case n < 19:
		f.w.settle(f.t)
	default:
		f.restart()
	}
}

func (f *forest) newKey() string {
	f.next++
	return fmt.Sprintf("objs/%03d", f.next)
}

// pick returns an object there and not marked, at random.
func (f *forest) pick() (string, bool) {
	var keys []string
	for key, o := range f.w.snapshot(f.t) {
		if !o.meta.Deleting() {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return "", false
	}
	slices.Sort(keys)
	return keys[f.rng.IntN(len(keys))], true
}

// owners returns up to two references to objects there and not marked,
// each blocking or not.
func (f *forest) owners() []apistore.Owner {
	var refs []apistore.Owner
	snap := f.w.snapshot(f.t)
	for range f.rng.IntN(3) {
		key, ok := f.pick()
		if !ok || slices.ContainsFunc(refs, func(r apistore.Owner) bool { return r.Key == key }) {
			continue
		}
		if o, ok := snap[key]; ok {
			refs = append(refs, apistore.Owner{Key: key, UID: o.uid, Block: f.rng.IntN(2) == 0})
		}
	}
	return refs
}

// restart stops the collector and runs another, or the same one again.
func (f *forest) restart() {
	f.run.stop()
	if f.rng.IntN(2) == 0 {
		f.run = runCollector(f.t, f.run.collector)
		return
	}
	f.run = f.w.start(f.t, owners.CollectorOptions{Workers: 1 + f.rng.IntN(3)})
}

// TestRandomForestsEndAsTheModelSays: whatever the order of creations,
// deletions in every mode, owners created again and restarts of the
// collector, once it has converged exactly the objects the model keeps
// from the last snapshot remain; none is marked; and each that names
// owners has one of them there (nothing is left to collect).
//
// A seed fixes the operations, not how the collector's workers interleave
// with them; the interleavings it has found wrong have deterministic tests:
// TestAChildIsCollectedWhenItsOwnerGoesAheadOfTheCache,
// TestAnOrphanDeletionKeepsAChildTheCollectorHasYetToHandle and, in
// reconcile, TestAConflictOverTheControllersOwnWriteWaitsForTheNewerObject.
func TestRandomForestsEndAsTheModelSays(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			each(t, func(t *testing.T, w world) {
				f := &forest{t: t, w: w, rng: rand.New(rand.NewPCG(seed, 0x6f776e657273)),
					modes: []apistore.Propagation{apistore.Background, apistore.Foreground, apistore.Orphan}}
				f.run = w.start(t, owners.CollectorOptions{Workers: 2})
				for range 80 {
					f.step()
				}
				want := newModel(w.snapshot(t)).remaining()
				w.settle(t)
				end := w.snapshot(t)
				require.Equal(t, want, sortedKeys(end))
				t.Logf("created %d, %d left", f.next, len(end))
				for key, o := range end {
					require.False(t, o.meta.Deleting(), "%s is still marked", key)
					if len(o.meta.Owners) > 0 {
						require.True(t, slices.ContainsFunc(o.meta.Owners, func(r apistore.Owner) bool {
							owner, ok := end[r.Key]
							return ok && owner.uid == r.UID
						}), "%s names only owners gone: %v", key, o.meta.Owners)
					}
				}
			})
		})
	}
}

func sortedKeys(objs map[string]snap) []string {
	keys := make([]string, 0, len(objs))
	for key := range objs {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys
}
