package main

import (
	"context"
	"sync"

	"github.com/converge-go/converge/reconcile/kit/prune"
	"github.com/converge-go/converge/store"
)

// This file holds the marks the operator leaves in PostgreSQL's COMMENTs
// on what it creates (reconcile/kit/prune.Mark: an owner and the store's
// identity), and reads back before it drops anything: a role or database
// is the operator's only if its comment is the operator's mark from this
// very store.

// The owners written in marks, also the names of the pruners that drop
// what they mark (a database's mark is reconcile/kit/external's, with its
// key and create beside the owner and store).
const (
	RoleOwner     = "postgres-operator.roles"
	DatabaseOwner = "postgres-operator.databases"
)

// marks makes and reads the operator's marks. The store's identity is read
// once, the first time it is needed, and kept: a store's identity never
// changes, and the operator keeps healing from its cache while the store
// is unreachable.
type marks struct {
	store store.Identifier

	mu       sync.Mutex
	identity string
}

// mark returns owner's mark with the store's identity.
func (m *marks) mark(ctx context.Context, owner string) (prune.Mark, error) {
	id, err := m.identityOf(ctx)
	if err != nil {
		return prune.Mark{}, err
	}
	return prune.Mark{Owner: owner, Store: id}, nil
}

func (m *marks) identityOf(ctx context.Context) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.identity != "" {
		return m.identity, nil
	}
	id, err := m.store.Identity(ctx)
	if err != nil {
		return "", err
	}
	m.identity = id
	return id, nil
}
