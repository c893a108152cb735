package httpstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/converge-go/converge/store"
)

// pathBatch serves store.BatchWriter: POST /v1/batch with a batchBody,
// answered with a batchAnswer.
const pathBatch = "/v1/batch"

// batchBody is a batch of writes on the wire.
type batchBody struct {
	Writes []wireWrite `json:"writes"`
}

// wireWrite is a store.Write on the wire: guards as in a query
// (encodeGuard), the value the codec's encoding (absent for a delete).
type wireWrite struct {
	Key      string          `json:"key"`
	Value    json.RawMessage `json:"value,omitempty"`
	Revision int64           `json:"revision,omitempty"`
	Delete   bool            `json:"delete,omitempty"`
	Guards   []string        `json:"guards,omitempty"`
}

// batchAnswer holds one result per write, in order: the object written
// (for a delete, its key and the delete's revision) or why it was refused.
type batchAnswer struct {
	Results []wireResult `json:"results"`
}

type wireResult struct {
	Object *wireObject `json:"object,omitempty"`
	Error  *wireError  `json:"error,omitempty"`
}

// batch serves WriteBatch: the writes are decoded and checked whole (each
// value as an update's body is, see decodeValue), then written with
// store.WriteBatch, in one batch if the served store is a
// store.BatchWriter. A refused write is answered in its result; bad input
// refuses the request, and nothing is written.
func (h *Handler[T]) batch(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseQuery(r.URL.RawQuery); err != nil {
		return err
	}
	writes, encoded, err := h.parseBatch(w, r)
	if err != nil {
		return err
	}
	res, err := store.WriteBatch(r.Context(), h.s, writes)
	if err != nil {
		return err
	}
	if len(res) != len(writes) {
		return fmt.Errorf("httpstore: the store answered %d writes of %d", len(res), len(writes))
	}
	ans := batchAnswer{Results: make([]wireResult, len(res))}
	for i, wr := range res {
		if wr.Err != nil {
			we := wireErrorOf(wr.Err)
			ans.Results[i].Error = &we
			continue
		}
		wo := wireObject{Key: wr.Object.Key, Revision: wr.Object.Revision, CreateRevision: wr.Object.CreateRevision}
		if !writes[i].Delete {
			a := writeArgs[T]{encoded: encoded[i]}
			if wo, err = h.written(a, wr.Object); err != nil {
				return err
			}
		}
		ans.Results[i].Object = &wo
	}
	writeJSON(w, http.StatusOK, ans)
	return nil
}

// parseBatch reads and checks a batch's body, returning its writes and
// each value's encoding as the codec keeps it.
func (h *Handler[T]) parseBatch(w http.ResponseWriter, r *http.Request) ([]store.Write[T], [][]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.maxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, nil, &statusError{fmt.Errorf("%w: request body exceeds %d bytes", store.ErrInvalid, tooBig.Limit), http.StatusRequestEntityTooLarge}
	case err != nil:
		return nil, nil, fmt.Errorf("%w: reading the request body: %v", store.ErrInvalid, err)
	}
	var b batchBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return nil, nil, fmt.Errorf("%w: malformed batch: %v", store.ErrInvalid, err)
	}
	writes := make([]store.Write[T], len(b.Writes))
	encoded := make([][]byte, len(b.Writes))
	for i, ww := range b.Writes {
		q := query{v: map[string][]string{paramGuard: ww.Guards}}
		guards, err := q.guards()
		if err != nil {
			return nil, nil, fmt.Errorf("batch write %d: %w", i, err)
		}
		writes[i] = store.Write[T]{Key: ww.Key, Revision: ww.Revision, Delete: ww.Delete, Guards: guards}
		switch {
		case ww.Delete && ww.Value != nil:
			return nil, nil, fmt.Errorf("%w: batch write %d: a delete carries no value", store.ErrInvalid, i)
		case ww.Delete:
			continue
		}
		if writes[i].Value, encoded[i], err = h.decodeValue(ww.Value); err != nil {
			return nil, nil, fmt.Errorf("batch write %d: %w", i, err)
		}
	}
	return writes, encoded, store.ValidateBatch(writes)
}
