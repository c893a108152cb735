package apistore

import (
	"fmt"
	"time"

	"github.com/converge-go/converge/store"
)

// Meta is what the layer keeps of an object besides its spec and status:
// the bookkeeping an API server owns. In JSON it is the object's
// "metadata" member.
//
// Generation and Deletion belong to the layer: whatever a write sets there
// is replaced by what the layer computes. Finalizers and Owners belong to
// the writer, within the rules of Store.
type Meta struct {
	// Generation counts the changes of the spec: 1 when the object is
	// created, bumped by every write whose spec differs from the stored
	// one, whoever writes it. A controller records in its status the
	// generation it reconciled, so that a lower observed generation means
	// "not yet reconciled".
	Generation int64 `json:"generation,omitempty"`
	// Finalizers name the cleanups that must be done before the object
	// may go. Deleting an object that has any only marks it (Deletion);
	// removing the last one from a marked object deletes it in the same
	// compare-and-swap. No finalizer may be added once the object is
	// marked.
	Finalizers []string `json:"finalizers,omitempty"`
	// Deletion is set when the object was deleted while it had
	// finalizers: the object stays readable, marked, until the last one
	// is removed. Once set it never changes.
	Deletion *Deletion `json:"deletion,omitempty"`
	// Owners are the objects this one belongs to: when every owner is gone
	// (or was deleted and created again), the garbage collector deletes
	// it.
	Owners []Owner `json:"owners,omitempty"`
}

// Deletion is the mark of an object being deleted.
type Deletion struct {
	// Revision is the revision the object had when its deletion was
	// asked for.
	Revision int64 `json:"revision"`
	// Time is when the layer marked it, by the marking process's clock.
	Time time.Time `json:"time"`
	// Propagation says what the deletion does to the object's children
	// (objects that name it as their owner): the one the delete gave, or,
	// if it gave none, the one the object's garbage-collector finalizer
	// stood for (see Meta.MarkedWith). The garbage collector follows it:
	// its finalizer, ForegroundFinalizer or OrphanFinalizer, holds the
	// object while the collector carries it out. "" (a mark written
	// around the layer) is Background.
	Propagation Propagation `json:"propagation,omitempty"`
}

// Owner names an object that owns another.
type Owner struct {
	// Key is the owner's key.
	Key string `json:"key"`
	// UID is the owner's CreateRevision: an owner deleted and created again
	// under the same key has another, and does not adopt the children of
	// the first.
	UID int64 `json:"uid"`
	// Block makes a foreground deletion of the owner wait until this child
	// is gone.
	Block bool `json:"block,omitempty"`
}

// Propagation is what deleting an owner does to its children. Given to a
// delete, each of the three replaces the garbage-collector finalizer the
// object carries; "" gives none, and keeps it (see Meta.MarkedWith).
type Propagation string

const (
	// Background deletes the owner at once (or marks it, if it has
	// finalizers other than the garbage collector's, which it removes);
	// the garbage collector then deletes its children.
	Background Propagation = "background"
	// Foreground marks the owner with the foreground finalizer; the
	// garbage collector deletes its children, and once no child that
	// blocks its owner's deletion is left, removes the finalizer, which
	// deletes the owner.
	Foreground Propagation = "foreground"
	// Orphan marks the owner with the orphan finalizer; the garbage
	// collector removes the owner from its children's Owners, then
	// removes the finalizer: the children stay.
	Orphan Propagation = "orphan"
)

// Finalizers the layer itself adds for Foreground and Orphan deletions,
// and removes for the other propagations given explicitly.
const (
	ForegroundFinalizer = "converge/foreground"
	OrphanFinalizer     = "converge/orphan"
)

// HasFinalizer reports whether m lists name.
func (m Meta) HasFinalizer(name string) bool {
	for _, f := range m.Finalizers {
		if f == name {
			return true
		}
	}
	return false
}

// Deleting reports whether the object is marked for deletion.
func (m Meta) Deleting() bool { return m.Deletion != nil }

// checkGCFinalizers refuses finalizers that list both ForegroundFinalizer
// and OrphanFinalizer: a deletion cannot go both ways.
func checkGCFinalizers(finalizers []string) error {
	fore, orphan := false, false
	for _, f := range finalizers {
		fore = fore || f == ForegroundFinalizer
		orphan = orphan || f == OrphanFinalizer
	}
	if fore && orphan {
		return fmt.Errorf("%w: apistore: finalizers %q and %q together", store.ErrInvalid, ForegroundFinalizer, OrphanFinalizer)
	}
	return nil
}
