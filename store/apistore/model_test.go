package apistore_test

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// model is what the layer's store should hold, kept by the rules of the
// package doc alone: the fuzz test compares the layer with it after every
// step.
type model struct {
	rev     int64
	objects map[string]*modelObject
}

// modelObject is one object of the model. spec and status are the numbers
// the test's values carry.
type modelObject struct {
	spec, status int
	gen          int64
	finalizers   []string
	mark         *apistore.Deletion
	rev, created int64
}

// outcome is what a step of the model expects of the layer: an error
// matching every one of errs (none: success), and for DeleteWith and
// Replace their flag.
type outcome struct {
	errs []error
	flag bool
}

func fails(errs ...error) outcome { return outcome{errs: errs} }

// check reports whether err is what o expects.
func (o outcome) check(err error) error {
	if len(o.errs) == 0 {
		if err != nil {
			return fmt.Errorf("unexpected error %v", err)
		}
		return nil
	}
	for _, want := range o.errs {
		if !errors.Is(err, want) {
			return fmt.Errorf("error %v, want one matching %v", err, o.errs)
		}
	}
	return nil
}

// at returns the object at key if revision is its revision, or the
// failure the layer gives: not found, or a conflict.
func (m *model) at(key string, revision int64) (*modelObject, outcome, bool) {
	o := m.objects[key]
	switch {
	case o == nil:
		return nil, fails(store.ErrNotFound), false
	case o.rev != revision:
		return nil, fails(store.ErrConflict), false
	}
	return o, outcome{}, true
}

// write records a write of o at the next revision.
func (m *model) write(o *modelObject) {
	m.rev++
	o.rev = m.rev
}

// bothGC reports whether finalizers list both of the garbage collector's,
// which no write may.
func bothGC(finalizers []string) bool {
	return slices.Contains(finalizers, apistore.ForegroundFinalizer) && slices.Contains(finalizers, apistore.OrphanFinalizer)
}

func (m *model) create(key string, spec, status int, finalizers []string) outcome {
	if bothGC(finalizers) {
		return fails(store.ErrInvalid)
	}
	if o := m.objects[key]; o != nil {
		if o.mark != nil {
			return fails(apistore.ErrDeleting, store.ErrExists)
		}
		return fails(store.ErrExists)
	}
	o := &modelObject{spec: spec, status: status, gen: 1, finalizers: finalizers}
	m.write(o)
	o.created = o.rev
	m.objects[key] = o
	return outcome{}
}

// update is Update and Replace: flag reports a delete.
func (m *model) update(key string, revision int64, spec int, finalizers []string) outcome {
	// The layer judges metadata against the stored object's (what it
	// already lists is accepted again), so a missing key or a stale
	// revision is reported first.
	o, out, ok := m.at(key, revision)
	if !ok {
		return out
	}
	if bothGC(finalizers) {
		return fails(store.ErrInvalid)
	}
	if o.mark != nil {
		for _, f := range finalizers {
			if !slices.Contains(o.finalizers, f) {
				return fails(apistore.ErrDeleting, store.ErrInvalid)
			}
		}
		if len(finalizers) == 0 {
			m.rev++
			delete(m.objects, key)
			return outcome{flag: true}
		}
	}
	next := *o
	if spec != o.spec {
		next.gen++
	}
	next.spec, next.finalizers = spec, finalizers
	m.store(o, next)
	return outcome{}
}

// store replaces o with next at the next revision, unless next holds what
// o holds (spec, status and metadata): a write that changes nothing is
// not stored.
func (m *model) store(o *modelObject, next modelObject) {
	if next.spec == o.spec && next.status == o.status && next.gen == o.gen &&
		slices.Equal(next.finalizers, o.finalizers) && next.mark == o.mark {
		return
	}
	*o = next
	m.write(o)
}

func (m *model) updateStatus(key string, revision int64, status int) outcome {
	o, out, ok := m.at(key, revision)
	if !ok {
		return out
	}
	next := *o
	next.status = status
	m.store(o, next)
	return outcome{}
}

// deleteWith is DeleteWith at now: flag reports a mark. As Kubernetes'
// API server: an explicit propagation takes the place of the garbage
// collector's finalizer the object carries; none ("") leaves it, and the
// one it carries (the first, if it lists both) stands for the
// propagation. An object left without finalizers goes.
func (m *model) deleteWith(key string, revision int64, p apistore.Propagation, now time.Time) outcome {
	o, out, ok := m.at(key, revision)
	switch {
	case !ok:
		return out
	case o.mark != nil:
		return outcome{flag: true}
	}
	gc := map[string]apistore.Propagation{apistore.ForegroundFinalizer: apistore.Foreground, apistore.OrphanFinalizer: apistore.Orphan}
	if p == "" {
		p = apistore.Background
		if i := slices.IndexFunc(o.finalizers, func(f string) bool { return gc[f] != "" }); i >= 0 {
			p = gc[o.finalizers[i]]
		}
	}
	var finalizers []string
	for _, f := range o.finalizers {
		if gc[f] == "" || gc[f] == p && !slices.Contains(finalizers, f) {
			finalizers = append(finalizers, f)
		}
	}
	for f, q := range gc {
		if q == p && !slices.Contains(finalizers, f) {
			finalizers = append(finalizers, f)
		}
	}
	if len(finalizers) == 0 {
		m.rev++
		delete(m.objects, key)
		return outcome{}
	}
	o.finalizers = finalizers
	o.mark = &apistore.Deletion{Revision: revision, Time: now.UTC(), Propagation: p}
	m.write(o)
	return outcome{flag: true}
}

// rawSpec is a write below the layer that changes the spec alone.
func (m *model) rawSpec(key string, spec int) {
	o := m.objects[key]
	o.spec = spec
	m.write(o)
}
