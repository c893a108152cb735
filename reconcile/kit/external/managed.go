package external

import "sync"

// managed holds, per key, the name of the external object its latest
// reconcile left in the world, for the drift listing (driftList) to list
// an object under its key whether it carries the mark or not. Memory
// follows keys alive: a key's entry goes when a reconcile of it finds no
// object, or its resource is deleted. Its zero value is empty.
type managed struct {
	mu    sync.Mutex
	names map[string]string // key → name
}

// left records that key's reconcile left the object name ("" for none).
func (m *managed) left(key, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if name == "" {
		delete(m.names, key)
		return
	}
	if m.names == nil {
		m.names = make(map[string]string)
	}
	m.names[key] = name
}

// byName returns the keys that manage each name.
func (m *managed) byName() map[string][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string][]string, len(m.names))
	for key, name := range m.names {
		out[name] = append(out[name], key)
	}
	return out
}

// gone tells drift and managed that key has no object: its resource is
// gone, or its object deleted or retained (forgotten).
func (r *Reconciler[Spec, Status]) gone(key string) {
	if r.drift == nil {
		return
	}
	r.managed.left(key, "")
	r.drift.Reconciled(key)
}

// saw tells drift and managed what the end of d's reconcile saw: an
// object as its spec says is what drift expects; one otherwise (a look
// after the kit's own write that found a hand change) is drift, and the
// next poll wakes the key.
func (r *Reconciler[Spec, Status]) saw(d Desired[Spec], obs Observation[Status]) {
	if r.drift == nil {
		return
	}
	name := d.Name
	if obs.State == Absent {
		name = ""
	}
	r.managed.left(d.Key, name)
	if obs.State == UpToDate {
		r.drift.Reconciled(d.Key, obs.Fingerprint)
		return
	}
	r.drift.Drifted(d.Key)
}
