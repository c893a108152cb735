package boltstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	"github.com/converge-go/converge/store"
	bolt "go.etcd.io/bbolt"
)

var _ store.Identifier = (*Store[int])(nil)

// Identity returns the store's identity (store.Identifier): made from 128
// random bits when the file was created, in the transaction that created
// it, and kept in the file, so it is the same after every reopen, from
// every process that opens the file, and in every copy of the file; a new
// file has a new one. Open reads and checks it (a damaged identity fails
// Open with ErrCorrupt), so Identity itself reads nothing. It fails like
// every method: store.ErrInvalid for a nil context or a Store not made by
// Open, store.ErrUnavailable once the Store is closed.
func (s *Store[T]) Identity(ctx context.Context) (string, error) {
	exit, err := s.enter(ctx)
	if err != nil {
		return "", err
	}
	defer exit()
	return s.identity, nil
}

// identityPrefix starts every identity of a bbolt store; 26 characters of
// base32 (crypto/rand.Text) follow.
const identityPrefix = "bolt:"

// newIdentity returns a fresh identity.
func newIdentity() string { return identityPrefix + rand.Text() }

// identityRecord is the value of the identity key: a checksum (of the key
// and the text) and the identity.
func identityRecord(identity string) []byte {
	return seal(identityKey, append(make([]byte, checksumLen), identity...))
}

// readIdentity reads and checks the identity record of the meta bucket:
// a missing, damaged or malformed record is ErrCorrupt.
func readIdentity(meta *bolt.Bucket) (string, error) {
	return parseIdentity(meta.Get(identityKey))
}

// parseIdentity checks the identity record rec (nil if there is none)
// and returns the identity it holds.
func parseIdentity(rec []byte) (string, error) {
	switch {
	case rec == nil:
		return "", fmt.Errorf("%w: the store has no identity", ErrCorrupt)
	case !intact(identityKey, rec):
		return "", fmt.Errorf("%w: the identity record is damaged", ErrCorrupt)
	}
	id := string(rec[checksumLen:])
	text, ok := strings.CutPrefix(id, identityPrefix)
	if !ok || len(text) != 26 || strings.Trim(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != "" {
		return "", fmt.Errorf("%w: malformed identity %q", ErrCorrupt, id)
	}
	return id, nil
}

// addIdentity gives a file of an earlier format, which had none, an
// identity, and marks it as a file of the current format. It runs in
// Open's transaction, after the file's records were checked or converted:
// the file is converted whole or not at all.
func addIdentity(meta *bolt.Bucket) (string, error) {
	id := newIdentity()
	err := errors.Join(
		meta.Put(identityKey, identityRecord(id)),
		meta.Put(formatKey, formatMarker()),
	)
	return id, err
}
