package httpstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/converge-go/converge/store"
)

// batchRequestBytes bounds the body of one batch request the client
// sends, below the server's default limit (DefaultMaxBodyBytes): a larger
// batch is sent in several requests.
const batchRequestBytes = DefaultMaxBodyBytes * 3 / 4

var _ store.BatchWriter[int] = (*Client[int])(nil)

// WriteBatch sends writes to the server's batch route, which writes them
// with store.WriteBatch (store.BatchWriter): in one batch if the served
// store is a store.BatchWriter, as every store of this module is. A batch
// whose encoding passes about 768 KiB is sent in several requests, each
// committed on its own. A request whose answer is lost fails each of its
// writes with store.ErrUnavailable (they may have landed) and each write
// after them, which was not sent. It needs a token that may write.
func (c *Client[T]) WriteBatch(ctx context.Context, writes []store.Write[T]) ([]store.WriteResult[T], error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	if err := store.ValidateBatch(writes); err != nil {
		return nil, err
	}
	wire := make([]wireWrite, len(writes))
	for i, w := range writes {
		wire[i] = wireWrite{Key: w.Key, Revision: w.Revision, Delete: w.Delete}
		for _, g := range w.Guards {
			wire[i].Guards = append(wire[i].Guards, encodeGuard(g))
		}
		if w.Delete {
			continue
		}
		b, err := c.encodeValue(w.Value)
		if err != nil {
			return nil, fmt.Errorf("batch write %d: %w", i, err)
		}
		wire[i].Value = b
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]store.WriteResult[T], len(writes))
	var failed error
	for start := 0; start < len(wire); {
		end := batchEnd(wire, start)
		if failed == nil {
			failed = c.sendBatch(ctx, writes[start:end], wire[start:end], out[start:end])
			if failed != nil && start == 0 && !errors.Is(failed, store.ErrUnavailable) {
				// Refused before the store was called: nothing written.
				return nil, failed
			}
		}
		if failed != nil {
			for i := start; i < end; i++ {
				out[i].Err = failed
			}
		}
		start = end
	}
	return out, nil
}

// batchEnd returns the end of the request that starts at start.
func batchEnd(wire []wireWrite, start int) int {
	size := 0
	for i := start; i < len(wire); i++ {
		n := 64 + len(wire[i].Key) + len(wire[i].Value)
		for _, g := range wire[i].Guards {
			n += len(g) + 4
		}
		if i > start && size+n > batchRequestBytes {
			return i
		}
		size += n
	}
	return len(wire)
}

// sendBatch sends one request of a batch and fills its results; it
// returns the error of a request that was refused or got no answer.
func (c *Client[T]) sendBatch(ctx context.Context, writes []store.Write[T], wire []wireWrite, out []store.WriteResult[T]) error {
	body, err := json.Marshal(batchBody{Writes: wire})
	if err != nil {
		return fmt.Errorf("%w: encode the batch: %v", store.ErrInvalid, err)
	}
	var ans batchAnswer
	if err := c.call(ctx, http.MethodPost, pathBatch, nil, body, true, &ans); err != nil {
		return err
	}
	if len(ans.Results) != len(writes) {
		return protocolErrorf("%s: %d results for %d writes", pathBatch, len(ans.Results), len(writes))
	}
	for i, r := range ans.Results {
		switch {
		case r.Error != nil:
			out[i].Err = r.Error.decode()
		case r.Object == nil || r.Object.Key != writes[i].Key:
			out[i].Err = protocolErrorf("%s: no object for %q in the answer", pathBatch, writes[i].Key)
		case writes[i].Delete:
			out[i].Object = store.Object[T]{Key: r.Object.Key, Revision: r.Object.Revision}
		default:
			if out[i].Object, err = c.decodeObject(*r.Object); err != nil {
				out[i].Err = err
			}
		}
	}
	return nil
}
