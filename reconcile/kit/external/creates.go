package external

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/converge-go/converge/internal/atomicfile"
)

// Creates is the operator's own record of the creates it starts, kept
// where no holder of a store token can write (status can say anything).
// The kit records a create there after status says it and before the
// world is called, and forgets it once the create is judged. An object
// found unmarked after a recorded create is adopted only if Creates
// holds that very create: a World whose Create makes the object and its
// mark in two steps (CREATE DATABASE, then COMMENT ON DATABASE) needs one,
// or an object a crash left unmarked between them is never adopted.
type Creates interface {
	// Begin records, durably, that create id of key is about to be made.
	Begin(ctx context.Context, key, id string) error
	// Holds reports whether Begin recorded create id of key, not since
	// ended.
	Holds(ctx context.Context, key, id string) (bool, error)
	// End forgets the create of key, if any.
	End(ctx context.Context, key string) error
}

// CreatesDir is a Creates kept in a directory private to the operator's
// user (made 0700 if missing): one file per key being created, written
// atomically and durably (internal/atomicfile), holding the key and the
// create's ID. An operator started with another directory adopts nothing
// that a crash left unmarked.
type CreatesDir string

func (d CreatesDir) path(key string) (string, error) {
	if d == "" {
		return "", fmt.Errorf("%w: CreatesDir: empty directory", ErrInvalid)
	}
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(string(d), hex.EncodeToString(sum[:16])), nil
}

func createsEntry(key, id string) []byte { return fmt.Appendf(nil, "%q %q\n", key, id) }

// Begin writes key's file.
func (d CreatesDir) Begin(_ context.Context, key, id string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(p, createsEntry(key, id), 0o600)
}

// Holds reads key's file.
func (d CreatesDir) Holds(_ context.Context, key, id string) (bool, error) {
	p, err := d.path(key)
	if err != nil {
		return false, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil && string(b) == string(createsEntry(key, id)), err
}

// End removes key's file.
func (d CreatesDir) End(_ context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
