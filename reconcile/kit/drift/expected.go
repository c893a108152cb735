package drift

import "slices"

// expected holds, per key, what a poll should list for it if nothing
// drifted: what the reconciler last reported it made or observed
// (Source.Reconciled), or what the latest poll listed, whichever came
// later.
//
// Invariants: an entry is absent (present false) or unsettled only if it
// was reported so, and then only until the next poll that began listing
// after the report; an entry with reported > 0 was reported after the
// latest applied poll began listing. So it holds the keys of the latest
// listing and the keys reported since: memory follows keys alive.
type expected struct {
	keys    map[string]expectation
	reports uint64 // the sequence number of the latest report
	learned bool   // a poll has been applied
}

// expectation is what a key should be listed with.
type expectation struct {
	fingerprint string
	present     bool   // the key has objects in the world
	unsettled   bool   // the reconciler left the key not as it wants it: any listing differs
	reported    uint64 // the report's sequence number; 0: from a poll
}

// reported records what the reconciler of key made or observed: its
// objects' fingerprint, or none (present false).
func (x *expected) reported(key, fingerprint string, present bool) {
	if x.keys == nil {
		x.keys = make(map[string]expectation)
	}
	x.reports++
	x.keys[key] = expectation{fingerprint: fingerprint, present: present, reported: x.reports}
}

// drifted records that the reconciler of key left it not as it wants it:
// whatever the next poll lists for key differs from what is expected.
func (x *expected) drifted(key string) {
	x.reported(key, "", false)
	e := x.keys[key]
	e.unsettled = true
	x.keys[key] = e
}

// listing marks the start of a poll's listing, for pollListed.
func (x *expected) listing() uint64 { return x.reports }

// pollListed takes seen, the fingerprints of a poll whose listing began
// at mark, and returns, sorted, the keys that drifted: those whose listed
// fingerprint, or presence, differs from what was expected of them, and
// those reported unsettled. Before
// the first poll only reported keys are compared, unless wakeAll. Then
// what was listed is expected of each key, but of those reported since
// mark: a report made while the listing ran may be newer than what it
// listed.
func (x *expected) pollListed(seen map[string]string, mark uint64, wakeAll bool) []string {
	var woken []string
	for key, fp := range seen {
		e, ok := x.keys[key]
		if !ok && !x.learned && !wakeAll {
			continue // the first poll learns what no report told
		}
		if !ok || !e.present || e.unsettled || e.fingerprint != fp {
			woken = append(woken, key)
		}
	}
	next := make(map[string]expectation, len(seen))
	for key, e := range x.keys {
		if _, listed := seen[key]; !listed && (e.present || e.unsettled) {
			woken = append(woken, key) // vanished, or unsettled
		}
		if e.reported > mark {
			next[key] = e
		}
	}
	for key, fp := range seen {
		if _, kept := next[key]; !kept {
			next[key] = expectation{fingerprint: fp, present: true}
		}
	}
	x.keys, x.learned = next, true
	slices.Sort(woken)
	return woken
}
