package owners

import "github.com/converge-go/converge/internal/mapshrink"

// pastFloor is the number of past keys held before the first sweep.
const pastFloor = 64

// lookup returns the revision of the object the cache holds under key,
// and whether it holds one.
type lookup func(key string) (rev int64, ok bool)

// pastKey is the newest revision at which the graph saw a key it holds
// no node for: removed (deleted), or naming no owner any more.
type pastKey struct {
	rev     int64
	removed bool
}

// past holds the keys the graph has seen go, or stop naming owners, while
// the cache may still hold an older object of theirs (the collector's own
// writes run ahead of its cache): with it the graph never takes a key back
// to an older object, and a child never counts an owner the collector has
// seen removed. It is the graph's, used under its lock.
//
// A key is let go once the cache holds nothing older under it (caughtUp),
// when the graph holds a node for it again, or when a live read has found
// its object still there (forget). The keys are swept whenever their
// number has doubled since the last sweep, so that those the cache has
// caught up with, and that nothing asks about, do not pile up.
type past struct {
	keys  map[string]pastKey
	limit int // len(keys) at which the next sweep happens
	peak  int // keys' largest size since it was last rebuilt (mapshrink)
}

// hides reports whether an object of key at revision rev is older than
// what the graph last saw of it.
func (p *past) hides(key string, rev int64) bool {
	k, ok := p.keys[key]
	return ok && rev <= k.rev
}

// note records that the graph saw key at revision rev, removed or naming
// no owner, then sweeps the keys if they are due, asking cached (if not
// nil) what the cache holds.
func (p *past) note(key string, rev int64, removed bool, cached lookup) {
	if rev <= 0 {
		return
	}
	if p.keys == nil {
		p.keys = make(map[string]pastKey)
	}
	if k, ok := p.keys[key]; ok && k.rev > rev {
		return
	}
	p.keys[key] = pastKey{rev: rev, removed: removed}
	mapshrink.Note(p.keys, &p.peak)
	if cached == nil || len(p.keys) < max(p.limit, pastFloor) {
		return
	}
	for k, at := range p.keys {
		if cur, ok := cached(k); caughtUp(at.rev, cur, ok) {
			delete(p.keys, k)
		}
	}
	p.keys = mapshrink.Shrunk(p.keys, &p.peak, mapshrink.Floor)
	p.limit = 2 * len(p.keys)
}

// removedSince reports whether the graph has seen key removed after rev,
// the revision of the object the cache holds under it; a removal the
// cache has caught up with is let go.
func (p *past) removedSince(key string, rev int64) bool {
	k, ok := p.keys[key]
	if !ok || !k.removed {
		return false
	}
	if caughtUp(k.rev, rev, true) {
		p.forget(key)
		return false
	}
	return true
}

// forget lets key go.
func (p *past) forget(key string) {
	if _, ok := p.keys[key]; ok {
		delete(p.keys, key)
		p.keys = mapshrink.Shrunk(p.keys, &p.peak, mapshrink.Floor)
	}
}

// caughtUp reports whether a cache holding an object at revision cur
// under a key (ok false: none) is as new as revision at, which the graph
// saw: an object newer than a removal is another one, created since.
func caughtUp(at, cur int64, ok bool) bool {
	return !ok || cur >= at
}
