package reconcile

import (
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/checkpoint"
)

// The informer's start from a checkpoint (Options.Checkpoint; the
// controller's side is recall.go). A cache never filled whose store
// cannot be listed within recall.after of a run's start calls recall.fn,
// which may install a checkpoint's state (startFrom). The cache then
// holds it as if listed at its revision, and its next attempt resumes the
// watch after that revision; it stays "from the checkpoint" (active) until
// it has caught up with the store: a list, or a progress report of the
// resumed watch (every change up to the store's revision then delivered).

// recall is the informer's part of a controller's checkpoint. fn, after
// and back are set before run; the rest is guarded by the informer's mu.
type recall struct {
	// fn loads and checks the checkpoint and, if usable, installs it
	// (startFrom); it reports whether it did.
	fn    func() bool
	after time.Duration
	// back is called once the cache caught up with the store, with the
	// function that ends active (called under the controller's lock).
	back func(end func())

	at     time.Time // this run's deadline for a list
	tried  bool      // fn was called in this run
	active bool      // the cache holds a checkpoint and has not caught up since
}

// armRecall starts a run's deadline for the list, if the cache was never
// filled.
func (in *informer[T]) armRecall() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.recall.fn != nil && !in.isFilled() {
		in.recall.at, in.recall.tried = time.Now().Add(in.recall.after), false
	}
}

// recallDeadline returns the deadline of a list that, missed, starts the
// cache from the checkpoint; ok false if none is due.
func (in *informer[T]) recallDeadline() (at time.Time, ok bool) {
	in.mu.RLock()
	defer in.mu.RUnlock()
	r := &in.recall
	if r.fn == nil || r.tried || r.at.IsZero() || in.isFilled() {
		return time.Time{}, false
	}
	return r.at, true
}

// tryRecall calls the controller's recall once its deadline has passed,
// and reports whether the cache now holds the checkpoint.
func (in *informer[T]) tryRecall() bool {
	at, ok := in.recallDeadline()
	if !ok || time.Now().Before(at) {
		return false
	}
	in.mu.Lock()
	in.recall.tried = true
	in.mu.Unlock()
	return in.recall.fn()
}

// untilRecall shortens a wait before the next attempt to end at the
// deadline of the list, if one is due.
func (in *informer[T]) untilRecall(d time.Duration) time.Duration {
	if at, ok := in.recallDeadline(); ok {
		return max(0, min(d, time.Until(at)))
	}
	return d
}

// startFrom installs st, a checkpoint's state, in the cache, which was
// never filled: its objects at its revision, as a list would (reported as
// initial changes), the cache filled and active, its identity st's. The
// store stays down (Health says why) and the next follow resumes the watch
// after st.Revision.
func (in *informer[T]) startFrom(st checkpoint.State[T]) {
	in.mu.Lock()
	changes := make([]change[T], 0, len(st.Objects))
	in.objects = make(map[string]store.Object[T], len(st.Objects))
	for _, obj := range st.Objects {
		in.put(obj, store.Object[T]{}, false)
		changes = append(changes, change[T]{Cur: obj, HasCur: true, Initial: true})
	}
	in.revision, in.complete = st.Revision, st.Revision
	in.resetRevKeys()
	in.listed = true
	in.ident.id = st.Identity
	in.recall.active = true
	if j := in.journal; j != nil {
		// The checkpoint holds exactly this: nothing to write until the
		// store serves.
		j.full = false
		clear(j.dirty)
		j.written, j.seen = st.Revision, st.Seen
	}
	close(in.filled)
	in.mu.Unlock()
	in.report(changes, st.Revision, false)
	in.freshListed()
}

// fromCheckpoint reports whether the cache holds a checkpoint's state and
// has not caught up with the store since.
func (in *informer[T]) fromCheckpoint() bool {
	in.mu.RLock()
	defer in.mu.RUnlock()
	return in.recall.active
}

// caughtUp ends the start from a checkpoint, if it is on: the cache has
// caught up with the store, which is then synced. The controller's back
// runs first, so that the keys that waited for the store are queued with
// the cache current.
func (in *informer[T]) caughtUp() {
	if !in.fromCheckpoint() {
		return
	}
	end := func() {
		in.mu.Lock()
		in.recall.active = false
		in.mu.Unlock()
	}
	if in.recall.back != nil {
		in.recall.back(end)
	} else {
		end()
	}
	in.markSynced()
}
