package owners

import "github.com/converge-go/converge/store/apistore"

// course is what an object's deletion does to its children now. The
// collector follows the propagation the deletion mark records
// (apistore.Deletion.Propagation), for as long as the finalizer of that
// propagation holds the object: once the collector has removed it, the
// deletion does nothing more to the children, and the owner counts as
// present until it is gone, as a Background one does.
type course uint8

const (
	// none: not marked, or marked in the Background, or done with its
	// children.
	none course = iota
	// foreground: marked Foreground with apistore.ForegroundFinalizer:
	// its children are deleted, and it waits for those that block it
	// (Kubernetes' "deleting dependents").
	foreground
	// orphaning: marked Orphan with apistore.OrphanFinalizer: its
	// children drop their reference to it.
	orphaning
)

// courseOf returns the course of the deletion of an object of metadata m.
func courseOf(m apistore.Meta) course {
	if !m.Deleting() {
		return none
	}
	switch m.Deletion.Propagation {
	case apistore.Foreground:
		if m.HasFinalizer(apistore.ForegroundFinalizer) {
			return foreground
		}
	case apistore.Orphan:
		if m.HasFinalizer(apistore.OrphanFinalizer) {
			return orphaning
		}
	}
	return none
}

// mark is what the graph keeps of a key's deletion.
type mark uint8

const (
	// unmarked: not marked for deletion.
	unmarked mark = iota
	// marked: marked, and not waiting for its children.
	marked
	// waiting: marked, its course foreground: it waits for its blocking
	// children.
	waiting
)

// markOf returns the mark of an object of metadata m.
func markOf(m apistore.Meta) mark {
	switch {
	case !m.Deleting():
		return unmarked
	case courseOf(m) == foreground:
		return waiting
	}
	return marked
}

// stray reports whether f, a finalizer of a marked object of metadata m,
// is a garbage-collector finalizer that its mark's propagation does not
// hold it with (one written around the layer, or kept by a mark made
// before the layer replaced it): the collector removes it, since nothing
// else would.
func stray(m apistore.Meta, f string) bool {
	if f != apistore.ForegroundFinalizer && f != apistore.OrphanFinalizer {
		return false
	}
	switch m.Deletion.Propagation {
	case apistore.Foreground:
		return f != apistore.ForegroundFinalizer
	case apistore.Orphan:
		return f != apistore.OrphanFinalizer
	}
	return true
}
