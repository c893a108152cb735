package store

import (
	"context"
	"fmt"

	"github.com/converge-go/converge/internal/nilness"
)

// Write is one compare-and-swap write of a batch (WriteBatch): a create
// when Revision is 0, else an update of Key at Revision or, with Delete,
// its delete at Revision. Its Guards are checked with it, as a single
// write's are.
type Write[T any] struct {
	Key   string
	Value T // the new value; ignored for a delete
	// Revision is the revision Key must still have (0: Key must not
	// exist, and the write is a create).
	Revision int64
	Delete   bool
	Guards   []Guard
}

// WriteResult is how one write of a batch ended.
type WriteResult[T any] struct {
	// Object is the object written, when Err is nil. For a delete it
	// holds Key and Revision only, Revision being the delete's.
	Object Object[T]
	// Err is why the write did not land, as the single write would say
	// it: ErrExists, ErrConflict, ErrNotFound, ErrGuardFailed, or
	// ErrUnavailable or the context's error when the write may or may
	// not have landed (as for a single write).
	Err error
}

// BatchWriter is implemented by a store that commits several
// compare-and-swap writes together. Every backend of this module
// implements it (the in-memory store under one lock, store/boltstore in
// one transaction, store/etcdstore in one Txn within etcd's limits,
// store/httpstore's client in one request), and so do the wrappers that
// pass it through (View, store/faultstore). Use it through WriteBatch,
// which falls back to one write at a time for any other store.
//
// The contract:
//
//   - Each write is checked on its own, as Create, Update or Delete would
//     check it: its revision and its guards. A refused write's result
//     carries the error the single write would return, and the batch's
//     other writes land regardless: a batch is not all-or-nothing.
//   - The writes that land are committed together: under one lock in
//     memory and in one transaction on bbolt (each taking the next
//     revision, in the batch's order, with no other write in between),
//     in one etcd Txn (all at one revision). A backend may split a batch
//     it cannot commit at once (etcd beyond its operations per Txn);
//     each part is atomic, and other writers may write between parts.
//   - Bad input (a key twice, a guard on a key the batch writes, or what
//     a single write would refuse: an invalid key, a nil value, a value
//     the codec refuses) refuses the whole batch with an error matching
//     ErrInvalid, and nothing is written. So does a nil context.
//   - WriteBatch returns one result per write, in order, or an error and
//     no results when nothing was written (bad input, the context ended
//     or the store unavailable before anything was sent).
type BatchWriter[T any] interface {
	WriteBatch(ctx context.Context, writes []Write[T]) ([]WriteResult[T], error)
}

// WriteBatch writes writes to s as one batch if s implements BatchWriter
// (see its contract), else one write after another, each atomic alone,
// each result that write's (a value s refuses as invalid is then reported
// on its write, after the writes before it have landed). An empty batch
// writes nothing and returns no results. A nil ctx or store, and a batch
// that ValidateBatch refuses, is refused with ErrInvalid.
func WriteBatch[T any](ctx context.Context, s Store[T], writes []Write[T]) ([]WriteResult[T], error) {
	switch {
	case ctx == nil:
		return nil, fmt.Errorf("%w: nil context", ErrInvalid)
	case nilness.Is(s):
		return nil, fmt.Errorf("%w: nil store", ErrInvalid)
	}
	if b, ok := s.(BatchWriter[T]); ok {
		return b.WriteBatch(ctx, writes)
	}
	if err := ValidateBatch(writes); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]WriteResult[T], len(writes))
	for i, w := range writes {
		out[i] = writeOne(ctx, s, w)
	}
	return out, nil
}

// writeOne makes w with a single write.
func writeOne[T any](ctx context.Context, s Store[T], w Write[T]) WriteResult[T] {
	var r WriteResult[T]
	switch {
	case w.Delete:
		var rev int64
		if rev, r.Err = s.Delete(ctx, w.Key, w.Revision, w.Guards...); r.Err == nil {
			r.Object = Object[T]{Key: w.Key, Revision: rev}
		}
	case w.Revision == 0:
		r.Object, r.Err = s.Create(ctx, w.Key, w.Value, w.Guards...)
	default:
		r.Object, r.Err = s.Update(ctx, w.Key, w.Value, w.Revision, w.Guards...)
	}
	return r
}

// ValidateBatch checks a batch as BatchWriter requires: every write valid
// as a single write would be (key, value unless a delete, revision,
// guards), a delete at a revision above 0, no key twice, no guard on a key
// the batch writes. The error matches ErrInvalid and names the write.
func ValidateBatch[T any](writes []Write[T]) error {
	keys := make(map[string]struct{}, len(writes))
	for i, w := range writes {
		if err := validateBatchWrite(w); err != nil {
			return fmt.Errorf("batch write %d: %w", i, err)
		}
		if _, dup := keys[w.Key]; dup {
			return fmt.Errorf("%w: batch write %d: key %q is written twice", ErrInvalid, i, w.Key)
		}
		keys[w.Key] = struct{}{}
	}
	for i, w := range writes {
		for _, g := range w.Guards {
			if _, ok := keys[g.Key]; ok {
				return fmt.Errorf("%w: batch write %d: guard on %q, which the batch writes", ErrInvalid, i, g.Key)
			}
		}
	}
	return nil
}

func validateBatchWrite[T any](w Write[T]) error {
	if w.Delete {
		if w.Revision == 0 {
			return fmt.Errorf("%w: delete of %q at revision 0", ErrInvalid, w.Key)
		}
		if err := ValidateKey(w.Key); err != nil {
			return err
		}
		if err := ValidateRevision(w.Revision); err != nil {
			return err
		}
		return ValidateGuards(w.Guards)
	}
	return validateWrite(w.Key, w.Value, w.Revision, w.Guards)
}

var (
	_ BatchWriter[int] = (*Memory[int])(nil)
	_ BatchWriter[int] = (*View[int])(nil)
)

// WriteBatch commits the batch under the store's lock (BatchWriter): each
// write that holds takes the next revision, in order, and no other write
// comes between them.
func (m *Memory[T]) WriteBatch(ctx context.Context, writes []Write[T]) ([]WriteResult[T], error) {
	if err := ValidateBatch(writes); err != nil {
		return nil, err
	}
	if err := m.lockUsable(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := make([]WriteResult[T], len(writes))
	cause := CauseFrom(ctx) // each revision of the batch keeps its writer's cause
	for i, w := range writes {
		out[i].Object, out[i].Err = m.writeLocked(w, cause)
	}
	return out, nil
}

// writeLocked makes one validated write of a batch, recording cause with
// its revision (WithCause). Call with m.mu held for writing.
func (m *Memory[T]) writeLocked(w Write[T], cause string) (Object[T], error) {
	if err := m.precheck(w.Guards); err != nil {
		return Object[T]{}, err
	}
	rev := m.rev + 1
	if w.Revision == 0 {
		if _, ok := m.objects[w.Key]; ok {
			return Object[T]{}, fmt.Errorf("%w: %q", ErrExists, w.Key)
		}
		obj := Object[T]{Key: w.Key, Value: w.Value, Revision: rev, CreateRevision: rev}
		m.commit(Created, obj, cause)
		return obj, nil
	}
	cur, err := m.expect(w.Key, w.Revision)
	if err != nil {
		return Object[T]{}, err
	}
	if w.Delete {
		cur.Revision = rev
		m.commit(Deleted, cur, cause)
		return Object[T]{Key: w.Key, Revision: rev}, nil
	}
	obj := Object[T]{Key: w.Key, Value: w.Value, Revision: rev, CreateRevision: cur.CreateRevision}
	m.commit(Updated, obj, cause)
	return obj, nil
}

// WriteBatch encodes every value, then writes the batch to the byte store
// with WriteBatch: as one batch if it implements BatchWriter. A value the
// codec refuses refuses the batch before anything is written.
func (v *View[T]) WriteBatch(ctx context.Context, writes []Write[T]) ([]WriteResult[T], error) {
	if err := v.check(ctx); err != nil {
		return nil, err
	}
	if err := ValidateBatch(writes); err != nil {
		return nil, err
	}
	raw := make([]Write[[]byte], len(writes))
	for i, w := range writes {
		raw[i] = Write[[]byte]{Key: w.Key, Revision: w.Revision, Delete: w.Delete, Guards: w.Guards}
		if w.Delete {
			continue
		}
		b, err := v.encode(w.Value)
		if err != nil {
			return nil, fmt.Errorf("batch write %d: %w", i, err)
		}
		raw[i].Value = b
	}
	res, err := WriteBatch(ctx, v.raw, raw)
	if err != nil {
		return nil, err
	}
	out := make([]WriteResult[T], len(res))
	for i, r := range res {
		out[i].Err = r.Err
		if r.Err == nil {
			o := r.Object
			out[i].Object = Object[T]{Key: o.Key, Revision: o.Revision, CreateRevision: o.CreateRevision}
			if !writes[i].Delete {
				out[i].Object.Value = writes[i].Value
			}
		}
	}
	return out, nil
}
