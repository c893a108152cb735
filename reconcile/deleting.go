package reconcile

import (
	"strings"

	"github.com/converge-go/converge/internal/mapshrink"
	"github.com/converge-go/converge/internal/nilness"
	"github.com/converge-go/converge/store"
)

// deletionMarker is implemented by values that can be marked for deletion
// while their finalizers run: apistore.Meta's Deleting method, promoted to
// every type that embeds it (resource.Resource does).
type deletionMarker interface{ Deleting() bool }

// marksDeletion reports whether values of T can be marked for deletion.
func marksDeletion[T any]() bool {
	var zero T
	_, ok := any(zero).(deletionMarker)
	return ok
}

// markedDeleting reports whether obj is marked for deletion (it has
// finalizers still to run: see apistore). Only values whose type
// implements deletionMarker can be.
func (c *Controller[T]) markedDeleting(obj store.Object[T]) bool {
	if !c.marks || nilness.Is(obj.Value) {
		return false
	}
	return any(obj.Value).(deletionMarker).Deleting()
}

// deletionSeen records whether key's latest change leaves it marked for
// deletion or not (unmarked, or removed): the keys being deleted, with
// when the mark was first seen, for Health.Deleting.
func (l *ledger[T]) deletionSeen(key string, marked bool, now monoTime) {
	if marked {
		if _, ok := l.deleting[key]; !ok {
			l.deleting[key] = now
			mapshrink.Note(l.deleting, &l.deletingPeak)
		}
		return
	}
	if len(l.deleting) > 0 {
		if _, ok := l.deleting[key]; ok {
			forgetKey(&l.deleting, &l.deletingPeak, key)
		}
	}
}

// deletions counts the keys being deleted and returns the first max of
// them in key order.
func (l *ledger[T]) deletions(max int) (int, []string) {
	first := pageHeap[string]{cmp: strings.Compare, max: max}
	for key := range l.deleting {
		first.offer(key)
	}
	return len(l.deleting), first.sorted()
}
