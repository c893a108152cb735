package httpstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/converge-go/converge/store"
)

var _ store.BatchWriter[int] = (*View[int])(nil)

// WriteBatch encodes every value, then sends the batch through the Shared
// client as one request (Client.WriteBatch): each write's revision and
// guards are checked on their own and its refusal reported on it; bad
// input anywhere refuses the whole batch with store.ErrInvalid and sends
// nothing.
func (v *View[T]) WriteBatch(ctx context.Context, writes []store.Write[T]) ([]store.WriteResult[T], error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	if err := store.ValidateBatch(writes); err != nil {
		return nil, err
	}
	raw := make([]store.Write[json.RawMessage], len(writes))
	for i, w := range writes {
		raw[i] = store.Write[json.RawMessage]{Key: w.Key, Revision: w.Revision, Delete: w.Delete, Guards: w.Guards}
		if w.Delete {
			continue
		}
		b, err := v.encode(w.Value)
		if err != nil {
			return nil, fmt.Errorf("batch write %d: %w", i, err)
		}
		raw[i].Value = b
	}
	res, err := v.s.raw.WriteBatch(ctx, raw)
	if err != nil {
		return nil, err
	}
	out := make([]store.WriteResult[T], len(res))
	for i, r := range res {
		switch {
		case r.Err != nil:
			out[i].Err = r.Err
		case writes[i].Delete:
			out[i].Object = store.Object[T]{Key: r.Object.Key, Revision: r.Object.Revision, CreateRevision: r.Object.CreateRevision}
		default:
			out[i].Object, out[i].Err = v.decode(r.Object)
		}
	}
	return out, nil
}
