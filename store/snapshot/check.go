package snapshot

import (
	"fmt"

	"github.com/converge-go/converge/store"
)

// MaxRevision is the highest revision a restore may give a store: a bbolt
// restore refuses a snapshot whose revision plus its bump exceeds it
// (ErrUnservable, naming the revision). It leaves room for 2^62 writes,
// and for the bump of a restore of the restored store's own snapshots,
// before a revision could pass the largest int64.
const MaxRevision = 1 << 62

// ValueCheck says whether the store a snapshot is restored into can serve
// value under key: nil if it can, else why not. A restore given one
// (boltstore.WithValueCheck, etcdstore.WithValueCheck) refuses the whole
// snapshot at the first object it fails, with an error matching
// ErrUnservable and store.ErrInvalid that names the key. A store server
// sets it to the decoding its layer applies to every read (Decodes), so
// that no value is restored that every read, list and write of its key
// would then fail on.
type ValueCheck func(key string, value []byte) error

// Decodes returns the ValueCheck of a store of T values encoded by codec:
// a value must decode with it and, if check is not nil, pass check (a
// layer's own reading of the decoded value: apistore's Kind.Meta, say).
func Decodes[T any](codec store.Codec[T], check func(T) error) ValueCheck {
	return func(_ string, value []byte) error {
		v, err := codec.Unmarshal(value)
		if err == nil && check != nil {
			err = check(v)
		}
		return err
	}
}

// checkValue runs the checks on o, read at line.
func checkValue(checks []ValueCheck, o store.Object[[]byte], line int) error {
	for _, c := range checks {
		if c == nil {
			continue
		}
		if err := c(o.Key, o.Value); err != nil {
			return fmt.Errorf("%w: %w: line %d: the value of %q: %w", ErrUnservable, store.ErrInvalid, line, o.Key, err)
		}
	}
	return nil
}
