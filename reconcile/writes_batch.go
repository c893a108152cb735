package reconcile

import (
	"context"
	"slices"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

var (
	_ store.BatchWriter[int] = (*writer[int])(nil)
	_ store.BatchWriter[int] = guardedWriter[int]{}
)

// WriteBatch commits writes as one batch of the primary store
// (store.BatchWriter), each write fenced, recorded and echo-suppressed as
// the same write through Request.Store alone would be: the statuses of a
// BatchReconciler's keys can go in one commit. Over the API-server layer,
// whose writes have rules of their own (a removed last finalizer deletes,
// a delete may only mark), or a store that is no store.BatchWriter, the
// writes are made one after another through Create, Update and Delete.
// Once the term of leadership is over the batch fails whole with
// store.ErrGuardFailed, and nothing is written.
func (w *writer[T]) WriteBatch(ctx context.Context, writes []store.Write[T]) ([]store.WriteResult[T], error) {
	if err := store.ValidateBatch(writes); err != nil {
		return nil, err
	}
	bw, ok := w.Store.(store.BatchWriter[T])
	if _, layered := w.Store.(apistore.Replacer[T]); !ok || layered {
		return w.oneByOne(ctx, writes), nil
	}
	fenced := make([]store.Write[T], len(writes))
	for i, wr := range writes {
		g, err := w.fence(wr.Guards)
		if err != nil {
			return nil, w.count(err)
		}
		fenced[i] = wr
		fenced[i].Guards = g
	}
	ows := make([]*ownWrite[T], len(writes))
	for i, wr := range writes {
		ows[i] = w.c.beginWrite(wr.Key)
	}
	res, err := bw.WriteBatch(ctx, fenced)
	for i, wr := range writes {
		switch {
		case err != nil:
			w.c.endWrite(wr.Key, ows[i], store.Object[T]{}, false, err)
		case wr.Delete:
			w.c.endWrite(wr.Key, ows[i], store.Object[T]{Key: wr.Key, Revision: res[i].Object.Revision}, true, res[i].Err)
		default:
			w.c.endWrite(wr.Key, ows[i], res[i].Object, false, res[i].Err)
		}
	}
	if err != nil {
		return nil, w.count(err)
	}
	for i := range res {
		res[i].Err = w.count(res[i].Err)
	}
	return res, nil
}

// oneByOne makes the writes of a batch one after another through the
// writer's own methods.
func (w *writer[T]) oneByOne(ctx context.Context, writes []store.Write[T]) []store.WriteResult[T] {
	out := make([]store.WriteResult[T], len(writes))
	for i, wr := range writes {
		r := &out[i]
		switch {
		case wr.Delete:
			var rev int64
			if rev, r.Err = w.Delete(ctx, wr.Key, wr.Revision, wr.Guards...); r.Err == nil {
				r.Object = store.Object[T]{Key: wr.Key, Revision: rev}
			}
		case wr.Revision == 0:
			r.Object, r.Err = w.Create(ctx, wr.Key, wr.Value, wr.Guards...)
		default:
			r.Object, r.Err = w.Update(ctx, wr.Key, wr.Value, wr.Revision, wr.Guards...)
		}
	}
	return out
}

// WriteBatch is the writer's, with the claim's guards added to each write
// (store.BatchWriter): every write of the batch is fenced by the
// ownership of this request's key, as an Update through it would be.
func (g guardedWriter[T]) WriteBatch(ctx context.Context, writes []store.Write[T]) ([]store.WriteResult[T], error) {
	guarded := make([]store.Write[T], len(writes))
	for i, wr := range writes {
		guarded[i] = wr
		guarded[i].Guards = append(slices.Clip(wr.Guards), g.guards...)
	}
	return g.writer.WriteBatch(ctx, guarded)
}
