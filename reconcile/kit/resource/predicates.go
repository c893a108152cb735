package resource

import (
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
)

// GenerationChanged is a Predicate for Resource that lets through creations,
// deletions and spec changes (a new Generation) and drops status-only
// changes. A controller does not need it to ignore its own status writes
// (Request.Store already keeps their echoes from waking the key); use it to
// ignore status written by others as well.
//
// A status write that conflicts with a change this predicate dropped is
// still reconciled again as soon as the newer object is cached.
func GenerationChanged[Spec, Status any]() reconcile.Predicate[*Resource[Spec, Status]] {
	return func(old, cur *objectOf[Spec, Status]) bool {
		if old == nil || cur == nil || old.Value == nil || cur.Value == nil {
			return true
		}
		return old.Value.Generation != cur.Value.Generation
	}
}

// objectOf is the stored object of a Resource.
type objectOf[Spec, Status any] = store.Object[*Resource[Spec, Status]]
