package snapshot

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/converge-go/converge/internal/running"
	"github.com/converge-go/converge/store"
)

// Version is the format version Save writes and Read reads.
const Version = 1

// MaxValueSize is the largest value, in bytes, a snapshot holds (sixteen
// times store.DefaultMaxValueSize): Save refuses a larger one with an
// error matching store.ErrInvalid, and a Reader refuses a longer line as
// damage, so that a damaged file cannot make it allocate without bound.
const MaxValueSize = 16 << 20

// Errors of the package, besides the store package's. Test for them with
// errors.Is.
var (
	// ErrDamaged: the snapshot is truncated, damaged or not a snapshot at
	// all: a line that does not parse, objects out of order, a count or a
	// checksum that does not match, bytes after the trailer. Nothing read
	// from it counts.
	ErrDamaged = errors.New("snapshot: damaged, truncated or not a snapshot")
	// ErrAlreadyRunning: Saver.Run called while another Run of the same
	// Saver is in progress. errors.Is matches it with the
	// ErrAlreadyRunning of every converge package
	// (reconcile.ErrAlreadyRunning included).
	ErrAlreadyRunning error = running.New("snapshot")
	// ErrFormat: the snapshot names a format version this package does not
	// know (written by a newer one).
	ErrFormat = errors.New("snapshot: unknown format version")
	// ErrNoSnapshot: a directory holds no good snapshot of the identity
	// asked for (Latest).
	ErrNoSnapshot = errors.New("snapshot: no good snapshot")
	// ErrIdentity: the snapshots at hand are of another store than the one
	// to restore (or that store's identity cannot be read): a snapshot of
	// another identity is restored only when named by its file.
	ErrIdentity = errors.New("snapshot: of another store's identity")
	// ErrUnservable: the snapshot holds what the store it is restored
	// into cannot serve: a value its layer or codec cannot decode
	// (ValueCheck), or a revision that leaves no room above it
	// (MaxRevision). The restore writes nothing; the error names the key
	// or the revision, and matches store.ErrInvalid too.
	ErrUnservable = errors.New("snapshot: holds what the store cannot serve")
)

// Info describes a snapshot: what its header says, and its checksum.
type Info struct {
	// Version is the snapshot's format version.
	Version int
	// Identity is the identity of the store saved (store.Identifier), ""
	// for a store without one.
	Identity string
	// Revision is the store revision the snapshot reflects: every write up
	// to it, none after it.
	Revision int64
	// Time is when the snapshot was taken, by the clock of the process that
	// took it, in UTC: for people to read; Latest and Retain never compare
	// it.
	Time time.Time
	// Count is the number of objects.
	Count int
	// Checksum is "sha256:" and the hex SHA-256 of everything before the
	// trailer; set once the whole snapshot has been written or read and
	// checked.
	Checksum string
}

// Restored is what a restore made of a snapshot (boltstore.Restore,
// etcdstore.Restore).
type Restored struct {
	// Snapshot is the snapshot restored.
	Snapshot Info
	// Identity is the restored store's identity: a new one, never the
	// snapshot's.
	Identity string
	// Revision is the restored store's revision once the restore is done:
	// every revision before it is compacted, so that a watch after one of
	// them fails with store.ErrCompacted.
	Revision int64
}

// Source is a store to take snapshots of: a byte store (Bytes), or a store
// of values of any type with the codec that gives their bytes (Typed).
// Every store.Store is one: memory, bbolt, etcd, a served store's client.
type Source interface {
	// capture lists every object of the store as one snapshot.
	capture(ctx context.Context) (capture, error)
	// revision returns the store's current revision and identity, to tell
	// whether it moved since a snapshot.
	revision(ctx context.Context) (rev int64, identity string, err error)
}

// capture is one List of a whole store, its values encoded.
type capture struct {
	identity string
	rev      int64
	objects  []store.Object[[]byte]
}

// Bytes returns the Source of a byte store: the values are saved as they
// are.
func Bytes(s store.Store[[]byte]) Source {
	return typed[[]byte]{s: s, codec: raw{}}
}

// Typed returns the Source of a store of T values, saved as their encoding
// by codec. A nil codec selects the store's own (store.Encoded) if it has
// one, else store.JSON. Restored into a byte backend, the values read back
// through the same codec.
func Typed[T any](s store.Store[T], codec store.Codec[T]) Source {
	if codec == nil {
		if enc, ok := s.(store.Encoded[T]); ok && enc.Codec() != nil {
			codec = enc.Codec()
		} else {
			codec = store.JSON[T]{}
		}
	}
	return typed[T]{s: s, codec: codec}
}

// raw is the codec of a byte store: the bytes as they are.
type raw struct{}

func (raw) Marshal(v []byte) ([]byte, error)   { return v, nil }
func (raw) Unmarshal(b []byte) ([]byte, error) { return b, nil }

type typed[T any] struct {
	s     store.Store[T]
	codec store.Codec[T]
}

func (t typed[T]) check(ctx context.Context) error {
	switch {
	case ctx == nil:
		return fmt.Errorf("snapshot: %w: nil context", store.ErrInvalid)
	case t.s == nil:
		return fmt.Errorf("snapshot: %w: nil store", store.ErrInvalid)
	}
	return nil
}

// capture reads the identity around one List of everything, so that a
// store replaced behind the List (an etcd cluster wiped) is an error, not a
// snapshot of one store under the identity of another.
func (t typed[T]) capture(ctx context.Context) (capture, error) {
	if err := t.check(ctx); err != nil {
		return capture{}, err
	}
	id, err := identityOf(ctx, t.s)
	if err != nil {
		return capture{}, err
	}
	objs, rev, err := t.s.List(ctx, "")
	if err != nil {
		return capture{}, fmt.Errorf("snapshot: list: %w", err)
	}
	if again, err := identityOf(ctx, t.s); err != nil {
		return capture{}, err
	} else if again != id {
		return capture{}, fmt.Errorf("snapshot: %w: the store's identity changed from %q to %q during the list", store.ErrUnavailable, id, again)
	}
	c := capture{identity: id, rev: rev, objects: make([]store.Object[[]byte], len(objs))}
	for i, o := range objs {
		b, err := t.codec.Marshal(o.Value)
		if err != nil {
			return capture{}, fmt.Errorf("snapshot: encode the value of %q: %w", o.Key, err)
		}
		if b == nil {
			b = []byte{}
		}
		if len(b) > MaxValueSize {
			return capture{}, fmt.Errorf("snapshot: %w: the value of %q has %d bytes, more than MaxValueSize", store.ErrInvalid, o.Key, len(b))
		}
		obj := store.Object[[]byte]{Key: o.Key, Value: b, Revision: o.Revision, CreateRevision: o.CreateRevision}
		if i > 0 {
			err = checkObject(objs[i-1].Key, obj, rev)
		} else {
			err = checkObject("", obj, rev)
		}
		if err != nil {
			// Never write what Read would refuse.
			return capture{}, fmt.Errorf("snapshot: the store's List breaks its contract: %v", err)
		}
		c.objects[i] = obj
	}
	return c, nil
}

func (t typed[T]) revision(ctx context.Context) (int64, string, error) {
	if err := t.check(ctx); err != nil {
		return 0, "", err
	}
	id, err := identityOf(ctx, t.s)
	if err != nil {
		return 0, "", err
	}
	rev, err := t.s.Revision(ctx)
	if err != nil {
		return 0, "", fmt.Errorf("snapshot: revision: %w", err)
	}
	return rev, id, nil
}

// identityOf returns s's identity, or "" if it has none: it is no
// store.Identifier, or says it has none with errors.ErrUnsupported (a view
// of a byte store without one, a served store without one).
func identityOf(ctx context.Context, s any) (string, error) {
	id, err := store.IdentityOf(ctx, s)
	if err != nil {
		return "", fmt.Errorf("snapshot: identity: %w", err)
	}
	return id, nil
}
