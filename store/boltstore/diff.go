package boltstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/converge-go/converge/store"
	bolt "go.etcd.io/bbolt"
)

var _ store.Differ[int] = (*Store[int])(nil)

// Diff returns the net change under prefix after revision after
// (store.Differ), read in one read transaction from the history: each key
// changed in it, once, with its last state. It fails with
// store.ErrCompacted when after is older than the retained history
// (WithHistory, Compact): the history is how a bbolt store remembers
// deletes.
func (s *Store[T]) Diff(ctx context.Context, prefix string, after int64) ([]store.Event[T], int64, error) {
	exit, err := s.enterPrefix(ctx, prefix)
	if err != nil {
		return nil, 0, err
	}
	defer exit()
	if err := store.ValidateRevision(after); err != nil {
		return nil, 0, err
	}
	var raws []rawEvent
	var rev int64
	err = view(s.db, func(tx *bolt.Tx) error {
		var err error
		raws, rev, err = lastChanges(tx, prefix, after)
		return err
	})
	switch {
	case errors.Is(err, store.ErrCompacted):
		return nil, 0, err
	case err != nil:
		return nil, 0, dbError(err)
	}
	out := make([]store.Event[T], len(raws))
	for i, raw := range raws {
		v, err := s.decode(raw.key, raw.value)
		if err != nil {
			return nil, 0, err
		}
		typ := raw.typ
		if typ != store.Deleted {
			typ = store.Updated
			if raw.createRev > after {
				typ = store.Created
			}
		}
		out[i] = store.Event[T]{Type: typ, Object: store.Object[T]{Key: raw.key, Value: v, Revision: raw.rev, CreateRevision: raw.createRev}}
	}
	return out, rev, nil
}

// lastChanges returns the last history record of each key under prefix
// written after revision after, in revision order, and the store's
// revision.
func lastChanges(tx *bolt.Tx, prefix string, after int64) ([]rawEvent, int64, error) {
	b, err := openBuckets(tx)
	if err != nil {
		return nil, 0, err
	}
	rev, err := readCounter(b.meta, revisionKey)
	if err != nil {
		return nil, 0, err
	}
	if after >= rev {
		return nil, rev, nil
	}
	compacted, err := readCounter(b.meta, compactedKey)
	if err != nil {
		return nil, 0, err
	}
	if after < compacted {
		return nil, 0, compactedError(after, compacted)
	}
	last := make(map[string]rawEvent)
	c := b.history.Cursor()
	for k, v := c.Seek(revKey(after + 1)); k != nil; k, v = c.Next() {
		ev, err := decodeHistory(revFromKey(k), v)
		if err != nil {
			return nil, 0, err
		}
		if strings.HasPrefix(ev.key, prefix) {
			last[ev.key] = ev
		}
	}
	out := make([]rawEvent, 0, len(last))
	for _, ev := range last {
		out = append(out, ev)
	}
	slices.SortFunc(out, func(a, b rawEvent) int { return cmp.Compare(a.rev, b.rev) })
	return out, rev, nil
}
