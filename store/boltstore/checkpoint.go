package boltstore

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/checkpoint"
	bolt "go.etcd.io/bbolt"
)

var _ checkpoint.Store[int] = (*Checkpoint[int])(nil)

// Checkpoint is a controller's checkpoint (reconcile.Options.Checkpoint)
// kept in a bbolt file of its own: one file per controller, held by one
// Checkpoint at a time (another Open fails with ErrLocked after the lock
// timeout). Its methods are safe for concurrent use.
//
// A Write is one bbolt transaction, committed and synced before it
// returns: after a crash at any moment the file holds the checkpoint
// before it or after it, whole. Load checks all it reads: every record's
// CRC-32C, the count of objects and a checksum over all of them (the
// layout is in checkpoint_layout.go), so that a file damaged or truncated
// anywhere is reported as checkpoint.ErrDamaged, never read as a state
// and never a panic (bbolt runs with its faults recovered, as the Store's
// does).
type Checkpoint[T any] struct {
	db    *bolt.DB
	codec store.Codec[T]

	mu sync.Mutex
	// damage is why what the file holds cannot be used (set aside at
	// Open, or found damaged by Load or Write), until a Write replaces it.
	damage error
}

// OpenCheckpoint opens the checkpoint file at path, creating it (whole:
// made under a temporary name and linked into place) if it does not
// exist. Of the options, WithCodec (store.JSON by default: the codec of
// the values, the same the store's if it has one) and WithLockTimeout
// count; the others are checked and otherwise unused.
//
// A file bbolt cannot safely read (one that fails the checks Open makes of
// a store's file: truncated, a page damaged, not a bbolt file), or that
// lacks a bucket of a checkpoint, is damaged: it is renamed to path
// ".damaged" (replacing an older one) and a new, empty checkpoint made in
// its place, and Load reports the damage (checkpoint.ErrDamaged and
// ErrCorrupt) until the next Write. A bbolt file that is not a checkpoint
// (a store's file, another program's) fails with ErrFormat and is left as
// it is, as is a file another Checkpoint holds (ErrLocked).
func OpenCheckpoint[T any](path string, opts ...Option) (*Checkpoint[T], error) {
	codec, cfg, err := newConfig[T](opts)
	if err != nil {
		return nil, err
	}
	db, err := openCheckpointDB(path, cfg)
	if !errors.Is(err, ErrCorrupt) {
		if err != nil {
			return nil, err
		}
		return &Checkpoint[T]{db: db, codec: codec}, nil
	}
	aside := path + ".damaged"
	if rerr := os.Rename(path, aside); rerr != nil {
		return nil, fmt.Errorf("boltstore: checkpoint %s is damaged (%w) and cannot be set aside: %w", path, err, rerr)
	}
	damage := fmt.Errorf("%w: %w; set aside as %s", checkpoint.ErrDamaged, err, aside)
	db, err = openCheckpointDB(path, cfg)
	if err != nil {
		return nil, err
	}
	return &Checkpoint[T]{db: db, codec: codec, damage: damage}, nil
}

// openCheckpointDB opens the checkpoint file at path, creating it first if
// it is missing, verified as Open verifies a store's file and with its
// buckets checked.
func openCheckpointDB(path string, cfg config) (*bolt.DB, error) {
	db, err := openWith(path, cfg, initCheckpoint)
	if err != nil {
		return nil, err
	}
	err = view(db, func(tx *bolt.Tx) error {
		_, _, err := cpBuckets(tx)
		return err
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	return db, nil
}

// Close closes the file. The Checkpoint is unusable afterwards.
func (c *Checkpoint[T]) Close() error { return c.db.Close() }

// Load returns the checkpoint the file holds, checkpoint.ErrNone if none
// was written, or an error matching checkpoint.ErrDamaged (and ErrCorrupt)
// if it is damaged. It reads and checks the whole file and decodes every
// value.
func (c *Checkpoint[T]) Load() (checkpoint.State[T], error) {
	c.mu.Lock()
	damage := c.damage
	c.mu.Unlock()
	if damage != nil {
		return checkpoint.State[T]{}, damage
	}
	var st checkpoint.State[T]
	err := view(c.db, func(tx *bolt.Tx) error {
		var err error
		st, err = c.read(tx)
		return err
	})
	if errors.Is(err, ErrCorrupt) {
		err = fmt.Errorf("%w: %w", checkpoint.ErrDamaged, err)
		c.mu.Lock()
		c.damage = err
		c.mu.Unlock()
	}
	return st, err
}

// read reads and checks the whole checkpoint in tx.
func (c *Checkpoint[T]) read(tx *bolt.Tx) (checkpoint.State[T], error) {
	meta, objects, err := cpBuckets(tx)
	if err != nil {
		return checkpoint.State[T]{}, err
	}
	rec := meta.Get(cpStateKey)
	if rec == nil {
		if k, _ := objects.Cursor().First(); k != nil {
			return checkpoint.State[T]{}, fmt.Errorf("%w: objects without a state record", ErrCorrupt)
		}
		return checkpoint.State[T]{}, checkpoint.ErrNone
	}
	hdr, err := decodeState(rec)
	if err != nil {
		return checkpoint.State[T]{}, err
	}
	st := checkpoint.State[T]{Identity: hdr.identity, Prefix: hdr.prefix, Revision: hdr.revision, Seen: hdr.seen}
	var count, sum uint64
	err = objects.ForEach(func(k, v []byte) error {
		createRev, rev, raw, err := decodeObject(string(k), v)
		switch {
		case err != nil:
			return err
		case rev > hdr.revision:
			return fmt.Errorf("%w: object %q at revision %d in a checkpoint of revision %d", ErrCorrupt, k, rev, hdr.revision)
		}
		value, err := c.codec.Unmarshal(raw)
		if err != nil {
			return fmt.Errorf("%w: object %q does not decode: %w", ErrCorrupt, k, err)
		}
		count++
		sum += recordSum(k, v)
		st.Objects = append(st.Objects, store.Object[T]{Key: string(k), Value: value, Revision: rev, CreateRevision: createRev})
		return nil
	})
	if err != nil {
		return checkpoint.State[T]{}, err
	}
	if count != hdr.count || sum != hdr.sum {
		return checkpoint.State[T]{}, fmt.Errorf("%w: the checkpoint holds %d objects of checksum %#x, its state says %d of %#x", ErrCorrupt, count, sum, hdr.count, hdr.sum)
	}
	return st, nil
}
