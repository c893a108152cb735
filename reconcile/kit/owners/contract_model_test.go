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

// contract says which objects of a snapshot remain once every deletion it
// shows has been carried out and every finalizer of the test's own
// removed, as the package doc states it, cycles of references included:
//
//   - a marked object goes;
//   - an object that names owners goes when every owner it names goes
//     (absent, another object under the key, or going itself), the
//     references to owners whose mark records Orphan set aside: those
//     leave it owned by no one, and it stays;
//   - nothing else goes.
//
// With cycles "goes" is the least set closed under these rules: a cycle
// no deletion reaches stays, however its members name one another. It
// holds for snapshots where no collection would orphan anything (no
// object that names owners carries the orphan finalizer): then whatever
// way an object is collected, in the foreground or not, its children
// follow it.
type contract struct {
	objs map[string]snap
}

// remaining returns the keys that stay, sorted.
func (c contract) remaining() []string {
	goes := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for key, o := range c.objs {
			if !goes[key] && (o.meta.Deleting() || c.collected(o.meta.Owners, goes)) {
				goes[key], changed = true, true
			}
		}
	}
	keys := []string{}
	for key := range c.objs {
		if !goes[key] {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return keys
}

// collected reports whether an object naming refs is collected, given the
// objects known to go.
func (c contract) collected(refs []apistore.Owner, goes map[string]bool) bool {
	left := 0
	for _, r := range refs {
		owner, ok := c.objs[r.Key]
		there := ok && owner.uid == r.UID
		switch {
		case there && owner.meta.Deleting() && owner.meta.Deletion.Propagation == apistore.Orphan:
			continue
		case there && !goes[r.Key]:
			return false
		}
		left++
	}
	return left > 0
}

// graphs is one run of the randomized test of the contract: objects
// created with random finalizers (the test's own, and the garbage
// collector's as an object may carry before its deletion) and random
// owners; owners set again on objects already there, which closes cycles;
// deletions with every propagation, the explicit ones and none; the
// test's finalizer removed from marked objects; restarts of the
// collector. The collector settles after each deletion and each removal,
// and what the contract says remains must be the same before and after
// (settle):
// when two members of a cycle are marked for a foreground deletion before
// the collector has reached either, what becomes of them depends on its
// timing, as in Kubernetes (see the package doc's Limits).
type graphs struct {
	t    *testing.T
	w    world
	rng  *rand.Rand
	run  *running
	next int
	// cycles counts the deletions of a member of a cycle of blocking
	// references.
	cycles int
}

func (g *graphs) step() {
	switch n := g.rng.IntN(20); {
	case n < 6:
		g.create()
	case n < 8:
		g.rewire()
	case n < 10:
		g.closeCycle()
	case n < 14:
		var inRing func(string, apistore.Meta) bool
		if g.rng.IntN(2) == 0 {
			snap := g.w.snapshot(g.t)
			inRing = func(key string, _ apistore.Meta) bool { return inCycle(snap, key) }
		}
		if key, ok := g.pick(false, inRing); ok {
			p := []apistore.Propagation{"", apistore.Background, apistore.Foreground, apistore.Orphan}[g.rng.IntN(4)]
			if inCycle(g.w.snapshot(g.t), key) {
				g.cycles++
			}
			g.w.removeIfThere(g.t, key, p)
			g.settle(fmt.Sprintf("a %q delete of %s", p, key))
		}
	case n < 17:
		if key, ok := g.pick(true, func(_ string, m apistore.Meta) bool { return m.HasFinalizer(holdFinalizer) }); ok {
			g.w.unhold(g.t, key)
			g.settle("the removal of the finalizer of " + key)
		}
	case n < 19:
		g.w.settle(g.t)
	default:
		g.run.stop()
		g.run = g.w.start(g.t, owners.CollectorOptions{Workers: 1 + g.rng.IntN(3)})
	}
}

// settle lets the collector converge after what, and requires that its
// work changed nothing of what the contract says remains in the end: it
// carried out the deletions it was shown as the contract says.
func (g *graphs) settle(what string) {
	g.t.Helper()
	want := contract{objs: g.w.snapshot(g.t)}.remaining()
	g.w.settle(g.t)
	require.Equal(g.t, want, contract{objs: g.w.snapshot(g.t)}.remaining(), "after %s", what)
}

// create makes an object with random finalizers: an object that carries
// the orphan finalizer names no owner (see contract).
func (g *graphs) create() {
	g.next++
	key := fmt.Sprintf("objs/%03d", g.next)
	var finalizers []string
	if g.rng.IntN(4) == 0 {
		finalizers = append(finalizers, holdFinalizer)
	}
	switch g.rng.IntN(6) {
	case 0:
		g.w.create(g.t, key, append(finalizers, apistore.OrphanFinalizer))
		return
	case 1:
		finalizers = append(finalizers, apistore.ForegroundFinalizer)
	}
	g.w.create(g.t, key, finalizers, g.owners(key)...)
}

// rewire sets the owners of an object there and not marked (one that
// carries no orphan finalizer) to random ones, any object there and not
// marked, older or newer.
func (g *graphs) rewire() {
	key, ok := g.pick(false, func(_ string, m apistore.Meta) bool { return !m.HasFinalizer(apistore.OrphanFinalizer) })
	if ok {
		g.w.(rewirer).setOwners(g.t, key, g.owners(key)...)
	}
}

// closeCycle picks an object there and not marked, follows its blocking
// references up a few owners, and makes the last one reached name it,
// blocking: a cycle of blocking references.
func (g *graphs) closeCycle() {
	snap := g.w.snapshot(g.t)
	key, ok := g.pick(false, func(_ string, m apistore.Meta) bool { return blocks(m.Owners) })
	if !ok {
		return
	}
	top := key
	for range 1 + g.rng.IntN(3) {
		var up []string
		for _, r := range snap[top].meta.Owners {
			if o, ok := snap[r.Key]; ok && r.Block && o.uid == r.UID && !o.meta.Deleting() && r.Key != key {
				up = append(up, r.Key)
			}
		}
		if len(up) == 0 {
			break
		}
		top = up[g.rng.IntN(len(up))]
	}
	if top == key || snap[top].meta.HasFinalizer(apistore.OrphanFinalizer) {
		return
	}
	refs := slices.DeleteFunc(slices.Clone(snap[top].meta.Owners), func(r apistore.Owner) bool { return r.Key == key })
	refs = append(refs, apistore.Owner{Key: key, UID: snap[key].uid, Block: true})
	g.w.(rewirer).setOwners(g.t, top, refs...)
}

// blocks reports whether any of refs blocks its owner's deletion.
func blocks(refs []apistore.Owner) bool {
	return slices.ContainsFunc(refs, func(r apistore.Owner) bool { return r.Block })
}

// pick returns, at random, an object marked or not as asked, for which
// want (if not nil) holds.
func (g *graphs) pick(isMarked bool, want func(key string, m apistore.Meta) bool) (string, bool) {
	var keys []string
	for key, o := range g.w.snapshot(g.t) {
		if o.meta.Deleting() == isMarked && (want == nil || want(key, o.meta)) {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return "", false
	}
	slices.Sort(keys)
	return keys[g.rng.IntN(len(keys))], true
}

// owners returns up to three references to objects there and not marked,
// other than key, each blocking or not.
func (g *graphs) owners(key string) []apistore.Owner {
	var refs []apistore.Owner
	snap := g.w.snapshot(g.t)
	for range g.rng.IntN(4) {
		owner, ok := g.pick(false, nil)
		if !ok || owner == key || slices.ContainsFunc(refs, func(r apistore.Owner) bool { return r.Key == owner }) {
			continue
		}
		refs = append(refs, apistore.Owner{Key: owner, UID: snap[owner].uid, Block: g.rng.IntN(3) > 0})
	}
	return refs
}

// finish removes the test's finalizer from every marked object, one at a
// time, until none is left to remove.
func (g *graphs) finish() {
	for {
		key, ok := g.pick(true, func(_ string, m apistore.Meta) bool { return m.HasFinalizer(holdFinalizer) })
		if !ok {
			return
		}
		g.w.unhold(g.t, key)
		g.settle("the removal of the finalizer of " + key)
	}
}

// TestRandomOwnerGraphsEndAsTheContractSays: whatever the owner graph
// (cycles of blocking references included), the finalizers objects carry
// before their deletion, the propagation each deletion gives (or none)
// and the restarts of the collector, once every finalizer of the test's
// own is removed and the collector has converged, exactly the objects the
// contract keeps from the snapshot taken before remain; none is marked;
// and each that names owners has one of them there.
func TestRandomOwnerGraphsEndAsTheContractSays(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			each(t, func(t *testing.T, w world) {
				g := &graphs{t: t, w: w, rng: rand.New(rand.NewPCG(seed, 0x6379636c6573))}
				g.run = w.start(t, owners.CollectorOptions{Workers: 2})
				for range 70 {
					g.step()
				}
				w.settle(t)
				want := contract{objs: w.snapshot(t)}.remaining()
				g.finish()
				end := w.snapshot(t)
				require.Equal(t, want, sortedKeys(end))
				t.Logf("created %d, %d left, %d deletions in a cycle", g.next, len(end), g.cycles)
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

// inCycle reports whether key is a member of a cycle of blocking
// references among the objects of objs.
func inCycle(objs map[string]snap, key string) bool {
	seen := map[string]bool{}
	var reaches func(from string) bool
	reaches = func(from string) bool {
		for _, r := range objs[from].meta.Owners {
			owner, ok := objs[r.Key]
			if !r.Block || !ok || owner.uid != r.UID || seen[r.Key] {
				continue
			}
			if r.Key == key {
				return true
			}
			seen[r.Key] = true
			if reaches(r.Key) {
				return true
			}
		}
		return false
	}
	return reaches(key)
}
