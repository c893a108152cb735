package owners

import (
	"slices"
	"strings"
	"sync"

	"github.com/converge-go/converge/internal/mapshrink"
	"github.com/converge-go/converge/store/apistore"
)

// graph is the collector's picture of who owns whom: for every key that
// names owners, the references it names and its mark (whether it is
// marked for deletion, and waiting for its children), as the key's last reconcile saw it (the object it was handed,
// or the one it wrote), or as the cache holds it if that is newer; and,
// for every owner key, the keys that name it.
//
// It is fed by the reconciles of the children themselves, not by the
// cache's events: a reconcile that changes what a child names learns the old
// references from the graph and wakes the owners it no longer names, and a
// child's own write (a reference removed, the child deleted) is in the
// graph before its owners are woken, though the cache has not seen it yet.
// So an owner woken by a change of its children always reads that change
// here.
//
// The cache may hold an older object than the graph, since the collector's
// own writes run ahead of it, and the controller neither wakes a key for
// their echoes nor for a deletion a reconcile was already handed: so the
// graph also remembers the keys it saw removed, or stop naming owners,
// until the cache catches up (past). A child woken by the removal of its
// owner then sees it gone, and the children of an owner being deleted can
// be read from the cache (to count those no reconcile has handed the
// graph yet: cachedChildren) without going back to older objects.
//
// Invariants, under mu: children[o][c] exists exactly when nodes[c].refs
// holds a reference whose Key is o; every node holds at least one
// reference; a key never goes back to an older revision than the newest
// the graph has seen of it, as a node or in past (an older object is
// ignored); past holds no key that has a node. The graph is built from
// the cache once per run (build), before any reconcile of the run reads or
// changes it, and is emptied between runs (reset).
type graph struct {
	mu       sync.Mutex
	built    bool
	nodes    map[string]node
	children map[string]map[string]struct{}
	past     past
	// cached reads the cache, for past's sweeps (nil: none); it is set
	// before the graph is used, and never changes.
	cached lookup
	// peaks are the maps' largest sizes since they were last rebuilt (see
	// mapshrink).
	nodesPeak, childrenPeak int
}

// node is what the graph knows of one child.
type node struct {
	rev  int64
	refs []apistore.Owner
	mark mark
}

// child is a key naming an owner, with its reference to it.
type child struct {
	key  string
	ref  apistore.Owner
	mark mark
}

// entry is a key as the cache holds it, for build.
type entry struct {
	key  string
	rev  int64
	refs []apistore.Owner
	mark mark
}

// reset empties the graph; the next reconcile builds it anew.
func (g *graph) reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.built, g.nodes, g.children, g.past = false, nil, nil, past{}
	g.nodesPeak, g.childrenPeak = 0, 0
}

// build fills an empty graph with what list returns, the first time it is
// called after reset; later calls do nothing. list runs under the graph's
// lock, so that no reconcile of the run reads a half-built graph.
func (g *graph) build(list func() []entry) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.built {
		return
	}
	for _, e := range list() {
		g.setLocked(e.key, node{rev: e.rev, refs: e.refs, mark: e.mark})
	}
	g.built = true
}

// seen records that key is at revision rev, naming refs, with mark mk.
// It returns the owner keys whose children changed (the keys named before
// or after, when the references changed), for the caller to wake. An
// object older than the newest seen of key changes nothing.
func (g *graph) seen(key string, rev int64, refs []apistore.Owner, mk mark) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	old, had := g.nodes[key]
	if had && rev < old.rev || !had && g.past.hides(key, rev) {
		return nil
	}
	if !had && len(refs) == 0 {
		return nil
	}
	g.removeLocked(key, old.refs)
	if len(refs) > 0 {
		g.setLocked(key, node{rev: rev, refs: slices.Clone(refs), mark: mk})
	} else {
		g.past.note(key, rev, false, g.cached)
	}
	if slices.Equal(old.refs, refs) {
		return nil
	}
	return ownerKeys(old.refs, refs)
}

// gone records that key was removed at revision rev (0: at a revision not
// known), and returns the owner keys it named.
func (g *graph) gone(key string, rev int64) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	old, had := g.nodes[key]
	if had && rev != 0 && rev < old.rev {
		return nil
	}
	g.past.note(key, rev, true, g.cached)
	if !had {
		return nil
	}
	g.removeLocked(key, old.refs)
	return ownerKeys(old.refs, nil)
}

// removedSince reports whether the graph has seen key removed after rev,
// the revision of the object the cache holds under it: the cache has yet
// to catch up with the removal.
func (g *graph) removedSince(key string, rev int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.past.removedSince(key, rev)
}

// forgetRemoval lets go of what the graph saw of key's removal: a live
// read found the object still there (a store replaced since).
func (g *graph) forgetRemoval(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.past.forget(key)
}

// childrenOf returns the keys that name owner, with their references to
// it, in key order.
func (g *graph) childrenOf(owner string) []child {
	g.mu.Lock()
	defer g.mu.Unlock()
	set := g.children[owner]
	out := make([]child, 0, len(set))
	for key := range set {
		n := g.nodes[key]
		for _, r := range n.refs {
			if r.Key == owner {
				out = append(out, child{key: key, ref: r, mark: n.mark})
			}
		}
	}
	slices.SortFunc(out, func(a, b child) int { return strings.Compare(a.key, b.key) })
	return out
}

// setLocked installs n as key's node and indexes its references.
func (g *graph) setLocked(key string, n node) {
	if len(n.refs) == 0 {
		return
	}
	if g.nodes == nil {
		g.nodes = make(map[string]node)
		g.children = make(map[string]map[string]struct{})
	}
	g.nodes[key] = n
	mapshrink.Note(g.nodes, &g.nodesPeak)
	g.past.forget(key)
	for _, r := range n.refs {
		set, ok := g.children[r.Key]
		if !ok {
			set = make(map[string]struct{})
			g.children[r.Key] = set
			mapshrink.Note(g.children, &g.childrenPeak)
		}
		set[key] = struct{}{}
	}
}

// removeLocked drops key's node, whose references are refs.
func (g *graph) removeLocked(key string, refs []apistore.Owner) {
	if _, ok := g.nodes[key]; !ok {
		return
	}
	delete(g.nodes, key)
	g.nodes = mapshrink.Shrunk(g.nodes, &g.nodesPeak, mapshrink.Floor)
	for _, r := range refs {
		set := g.children[r.Key]
		delete(set, key)
		if len(set) == 0 {
			delete(g.children, r.Key)
			g.children = mapshrink.Shrunk(g.children, &g.childrenPeak, mapshrink.Floor)
		}
	}
}

// ownerKeys returns the distinct keys named by a or b, in order.
func ownerKeys(a, b []apistore.Owner) []string {
	keys := make([]string, 0, len(a)+len(b))
	for _, refs := range [][]apistore.Owner{a, b} {
		for _, r := range refs {
			if !slices.Contains(keys, r.Key) {
				keys = append(keys, r.Key)
			}
		}
	}
	return keys
}
