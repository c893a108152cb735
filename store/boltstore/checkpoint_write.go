package boltstore

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/checkpoint"
	bolt "go.etcd.io/bbolt"
)

// encoded is one object of a batch, its record made.
type encoded struct {
	key string
	rec []byte
}

// Write applies b in one transaction, committed and synced before it
// returns nil (checkpoint.Store): whole, or not at all. A batch that fails
// b.Check, or whose values the codec refuses, is an error matching
// checkpoint.ErrInvalid (and store.ErrInvalid) and writes nothing. Without
// Replace, a checkpoint known to be damaged, or a record the batch
// replaces found damaged, fails it with checkpoint.ErrDamaged: a batch
// with Replace then starts the checkpoint afresh. It costs one encoding
// and one record per object put, a read of each record it replaces, and
// one sync.
func (c *Checkpoint[T]) Write(b checkpoint.Batch[T]) error {
	if err := b.Check(); err != nil {
		return fmt.Errorf("%w: %w", store.ErrInvalid, err)
	}
	puts, err := c.encode(b.Put)
	if err != nil {
		return err
	}
	c.mu.Lock()
	damage := c.damage
	c.mu.Unlock()
	if damage != nil && !b.Replace {
		return damage
	}
	err = update(c.db, func(tx *bolt.Tx) error { return c.apply(tx, &b, puts) })
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			err = fmt.Errorf("%w: %w", checkpoint.ErrDamaged, err)
			c.mu.Lock()
			c.damage = err
			c.mu.Unlock()
		}
		return err
	}
	if b.Replace {
		c.mu.Lock()
		c.damage = nil
		c.mu.Unlock()
	}
	return nil
}

// encode makes the records of puts, in key order (bbolt writes sorted
// keys fastest).
func (c *Checkpoint[T]) encode(puts []store.Object[T]) ([]encoded, error) {
	out := make([]encoded, len(puts))
	for i, obj := range puts {
		raw, err := c.codec.Marshal(obj.Value)
		if err != nil {
			return nil, fmt.Errorf("%w: %w: object %q: %w", checkpoint.ErrInvalid, store.ErrInvalid, obj.Key, err)
		}
		out[i] = encoded{key: obj.Key, rec: encodeObject(obj.Key, obj.CreateRevision, obj.Revision, raw)}
	}
	slices.SortFunc(out, func(a, b encoded) int { return strings.Compare(a.key, b.key) })
	return out, nil
}

// apply writes a batch in tx, keeping the state's count and sum: from
// zero for a Replace (the objects bucket made anew), else from the state
// record, less the records replaced or deleted.
func (c *Checkpoint[T]) apply(tx *bolt.Tx, b *checkpoint.Batch[T], puts []encoded) error {
	meta, objects, err := cpBuckets(tx)
	if err != nil {
		return err
	}
	var st cpState
	if b.Replace {
		if err := tx.DeleteBucket(cpObjectsBucket); err != nil {
			return err
		}
		if objects, err = tx.CreateBucket(cpObjectsBucket); err != nil {
			return err
		}
	} else if rec := meta.Get(cpStateKey); rec != nil {
		if st, err = decodeState(rec); err != nil {
			return err
		}
	}
	// uncount takes the record key holds, if any, out of the count and
	// the sum.
	uncount := func(key []byte) (had bool, _ error) {
		old := objects.Get(key)
		if old == nil {
			return false, nil
		}
		if !intact(key, old) {
			return true, fmt.Errorf("%w: the record of object %q is damaged", ErrCorrupt, key)
		}
		st.count--
		st.sum -= recordSum(key, old)
		return true, nil
	}
	for _, k := range b.Delete {
		key := []byte(k)
		had, err := uncount(key)
		if err != nil {
			return err
		}
		if had {
			if err := objects.Delete(key); err != nil {
				return err
			}
		}
	}
	for _, p := range puts {
		key := []byte(p.key)
		if _, err := uncount(key); err != nil {
			return err
		}
		if err := objects.Put(key, p.rec); err != nil {
			return err
		}
		st.count++
		st.sum += recordSum(key, p.rec)
	}
	st.revision, st.seen, st.identity, st.prefix = b.Revision, b.Seen, b.Identity, b.Prefix
	return meta.Put(cpStateKey, encodeState(st))
}
