package prune

import (
	"context"
	"fmt"
	"sync"

	"github.com/converge-go/converge/internal/nilness"
	"github.com/converge-go/converge/store"
)

// Marker hands out an operator's Mark, reading the store's identity once
// per identity rather than once per call: at the first Mark, and again
// only after Learn was told of another identity or Forget was called. A
// Pruner's passes read the identity anyway and tell its Marker (Learn),
// so a store replaced under a running operator is marked with its new
// identity from the next pass on. Until then, objects made are marked
// with the old identity: a pass counts them as another store's
// (Selection.OtherStore) and never deletes them.
//
// The zero Marker has no owner nor store: Mark returns an error matching
// ErrInvalid. A Marker is safe for concurrent use.
type Marker struct {
	owner string
	id    store.Identifier

	mu    sync.Mutex
	known string // the identity last read or learned; "" for none
}

// NewMarker returns the Marker of owner over the store s. A nil s or an
// empty owner returns an error matching ErrInvalid.
func NewMarker(owner string, s store.Identifier) (*Marker, error) {
	switch {
	case owner == "":
		return nil, fmt.Errorf("%w: NewMarker: empty owner", ErrInvalid)
	case nilness.Is(s):
		return nil, fmt.Errorf("%w: NewMarker: nil store", ErrInvalid)
	}
	return &Marker{owner: owner, id: s}, nil
}

// Mark returns the mark to store beside an object made now: the owner and
// the store's identity, read from the store only if none is known. It
// fails as store.Identifier.Identity does, and with ErrInvalid for an
// empty identity.
func (m *Marker) Mark(ctx context.Context) (Mark, error) {
	if m == nil || m.id == nil {
		return Mark{}, fmt.Errorf("%w: a Marker is made by NewMarker", ErrInvalid)
	}
	m.mu.Lock()
	known := m.known
	m.mu.Unlock()
	if known != "" {
		return Mark{Owner: m.owner, Store: known}, nil
	}
	id, err := m.id.Identity(ctx)
	if err != nil {
		return Mark{}, err
	}
	if id == "" {
		return Mark{}, fmt.Errorf("%w: the store reported an empty identity", ErrInvalid)
	}
	m.Learn(id)
	return Mark{Owner: m.owner, Store: id}, nil
}

// Learn tells the Marker the store's identity, as read elsewhere (a
// pass); an empty identity is ignored.
func (m *Marker) Learn(identity string) {
	if m == nil || identity == "" {
		return
	}
	m.mu.Lock()
	m.known = identity
	m.mu.Unlock()
}

// Forget makes the next Mark read the identity again.
func (m *Marker) Forget() {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.known = ""
	m.mu.Unlock()
}
