package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
)

// Identifier is implemented by a store that has an identity: a string made
// with the store and kept for its whole life, so that a client can tell "the
// store is empty" from "this is another, fresh store". A controller that
// prunes the world of what is no longer desired checks it first: an empty
// desired set read from a store of another identity than the one it synced
// with is not a reason to delete anything.
//
// An identity is opaque: compare it for equality, never parse it. It is not
// empty, it is the same from every call, every process and every client of
// the store, and two stores made separately have different identities
// (each is made from 128 random bits, or from what the backend itself makes
// unique). It says nothing about the store's content: a store emptied by
// deletes keeps its identity, and a copy of a store's data (a bbolt file
// copied, an etcd snapshot restored under the cluster's own token; see each
// backend) carries the identity of the store copied, with its revisions as
// they were when it was copied.
//
// Identity returns an error matching ErrInvalid for a nil context or a store
// not made by its constructor, the context's error, or ErrUnavailable when
// the store cannot be reached (a store that must read its identity from
// elsewhere, etcd, does so on every call, so that a store replaced behind a
// running client shows as another one).
type Identifier interface {
	Identity(ctx context.Context) (string, error)
}

var (
	_ Identifier = (*Memory[int])(nil)
	_ Identifier = (*View[int])(nil)
)

// newIdentity returns a fresh identity: "memory:" and 128 random bits.
func newIdentity() string { return "memory:" + rand.Text() }

// Identity returns the identity NewMemory made for the store: the same for
// the store's whole life, and another for every store NewMemory makes. It
// fails like every method: ErrInvalid for a nil context or a Memory not made
// by NewMemory, ErrUnavailable once the store is closed.
func (m *Memory[T]) Identity(ctx context.Context) (string, error) {
	if err := m.begin(ctx); err != nil {
		return "", err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.usable(); err != nil {
		return "", err
	}
	return m.identity, nil
}

// Identity returns the identity of the view's byte store: views of one byte
// store share it. A byte store that is no Identifier makes it fail with an
// error matching ErrInvalid and errors.ErrUnsupported.
func (v *View[T]) Identity(ctx context.Context) (string, error) {
	if err := v.check(ctx); err != nil {
		return "", err
	}
	id, ok := v.raw.(Identifier)
	if !ok {
		return "", fmt.Errorf("%w: %w: the byte store %T of the view has no identity", ErrInvalid, errors.ErrUnsupported, v.raw)
	}
	return id.Identity(ctx)
}

// IdentityOf returns s's identity, or "" if it has none: s is no
// Identifier, or says it has none with errors.ErrUnsupported (a view of a
// byte store without one, a served store without one). Any other error
// of Identity is returned as it is.
func IdentityOf(ctx context.Context, s any) (string, error) {
	ider, ok := s.(Identifier)
	if !ok {
		return "", nil
	}
	id, err := ider.Identity(ctx)
	if errors.Is(err, errors.ErrUnsupported) {
		return "", nil
	}
	return id, err
}

// HistoryReason says why a client found a store to be another history than
// the one it read before: its revisions then say nothing of the ones the
// client holds, so it reads the store whole again. A controller reports
// the latest in Health.History; logs and the debug page use these words.
type HistoryReason string

const (
	// AnotherIdentity: the store answers another identity (Identifier)
	// than the one it was read under: it was restored from a snapshot, or
	// replaced.
	AnotherIdentity HistoryReason = "another identity"
	// RolledBack: the store answers the same identity (or none) at a
	// revision below one the client read: it was restored from an older
	// copy of its file or data, or the client's saved state (a
	// checkpoint) is newer than the store.
	RolledBack HistoryReason = "rolled back"
)
