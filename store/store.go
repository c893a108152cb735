package store

import (
	"context"
	"fmt"
)

// Object is a stored value with its key and revisions.
//
// Objects returned by the in-memory store are shared with the store and with
// other readers: treat Value as immutable (copy before changing it).
type Object[T any] struct {
	Key   string
	Value T
	// Revision is the store revision of the last write to this key.
	Revision int64
	// CreateRevision is the store revision of the write that created the key.
	// It stays the same across updates and changes when the key is deleted
	// and created again.
	CreateRevision int64
}

// EventType says what a watch event records.
type EventType uint8

const (
	// Created: the key did not exist before this revision.
	Created EventType = iota + 1
	// Updated: the key existed and was replaced.
	Updated
	// Deleted: the key was removed; the event carries its last value.
	Deleted
	// Progress records no change: every change up to Object.Revision under
	// the watch's prefix has been delivered before it. A watch sends one
	// only in answer to ProgressRequester.RequestProgress, so a caller that
	// never asks never sees one. Its Object has no Key and no Value.
	Progress
)

// String returns "Created", "Updated" or "Deleted".
func (t EventType) String() string {
	switch t {
	case Created:
		return "Created"
	case Updated:
		return "Updated"
	case Deleted:
		return "Deleted"
	case Progress:
		return "Progress"
	}
	return fmt.Sprintf("EventType(%d)", uint8(t))
}

// Event is one change delivered by a watch (or, for Progress, a report of
// how far the watch has delivered).
type Event[T any] struct {
	Type EventType
	// Object is the object after the change. For Deleted, Object holds the
	// last value the key had and Object.Revision is the revision of the delete.
	Object Object[T]
	// Cause is the W3C traceparent the writer of this revision carried
	// (WithCause), "" if none or if the store does not record causes. It
	// is opaque to the store and never part of the object.
	Cause string
}

// Guard is a precondition on another key, checked atomically with a write.
// With Created false the key's Revision (last write) must equal Revision;
// with Created true its CreateRevision must. A Revision of 0 requires the key
// to be absent.
type Guard struct {
	Key      string
	Revision int64
	Created  bool
}

// Store is a versioned key-value store with compare-and-swap writes and
// ordered watches. Implementations are safe for concurrent use.
//
// Every method validates its input first: an empty key, a key longer than
// MaxKeyLen, a key that is not valid UTF-8 or holds a NUL byte, or a nil
// value return an error matching ErrInvalid and write nothing.
type Store[T any] interface {
	// Get returns the object stored at key, or ErrNotFound.
	Get(ctx context.Context, key string) (Object[T], error)

	// List returns the objects whose keys start with prefix ("" for all),
	// sorted by key, as one consistent snapshot, with the store revision
	// that snapshot reflects.
	List(ctx context.Context, prefix string) ([]Object[T], int64, error)

	// Create stores value at key if the key does not exist, else returns
	// ErrExists.
	Create(ctx context.Context, key string, value T, guards ...Guard) (Object[T], error)

	// Update replaces the value at key if its Revision is still revision;
	// otherwise it returns ErrConflict (or ErrNotFound if the key is gone).
	Update(ctx context.Context, key string, value T, revision int64, guards ...Guard) (Object[T], error)

	// Delete removes key if its Revision is still revision; otherwise it
	// returns ErrConflict (or ErrNotFound). It returns the revision of the
	// delete.
	Delete(ctx context.Context, key string, revision int64, guards ...Guard) (int64, error)

	// Watch delivers every change to keys starting with prefix made after
	// revision after, in revision order, exactly once. If after is older than
	// the retained history Watch fails with ErrCompacted (at once, or as the
	// watch's Err); the caller re-lists and watches from the list's revision.
	Watch(ctx context.Context, prefix string, after int64) (Watcher[T], error)

	// Revision returns the store's current revision.
	Revision(ctx context.Context) (int64, error)
}

// Watcher is a running watch. Its events arrive on Events in revision order;
// when the watch ends, for whatever reason, Events is closed and Err says why:
// nil after Stop, the context's error, ErrCompacted, ErrLagging (the watcher
// fell too far behind) or ErrUnavailable. The caller resumes with a new Watch
// after the revision of the last event it received.
type Watcher[T any] interface {
	Events() <-chan Event[T]
	// Err is valid once Events is closed.
	Err() error
	// Stop ends the watch and releases its resources; it is safe to call
	// more than once and after the watch has ended.
	Stop()
}

// ProgressRequester is implemented by a Watcher that can confirm how far it
// has delivered. Every watch of this module's backends implements it; a
// consumer checks for it with a type assertion and falls back (to a re-list,
// or to Store.Revision as a liveness probe) when it is missing.
//
// Several events may share a revision (one etcd transaction writes many
// keys), so the revision of the last event received does not prove that
// revision complete; a Progress event does.
type ProgressRequester interface {
	// RequestProgress asks the watch to send, on Events, an event of type
	// Progress whose Object.Revision R is at least the store's revision at
	// the time of the request, after every change up to R under the watch's
	// prefix. It does not wait for the answer. A watch that cannot reach its
	// store does not answer until it can, so a request left unanswered for
	// long is a sign of an outage even while the watch itself stays open.
	// Requests may be coalesced: one Progress event can answer several. It
	// returns an error (ErrInvalid for a nil ctx, ErrUnavailable or the
	// context's error) only when the request could not be made.
	RequestProgress(ctx context.Context) error
}
