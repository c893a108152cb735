package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// patched returns cur with patch merged (mergePatch), unless that removes
// the last finalizer of a resource marked for deletion: an apply never
// completes a deletion, so that is refused (apistore.ErrDeleting, exit 1)
// and the whole object must be put instead.
func patched(cur, patch value) (value, error) {
	next, err := mergePatch(cur, patch)
	if err != nil {
		return nil, err
	}
	stored, err := kind.Meta(cur)
	if err != nil || !stored.Deleting() {
		return next, nil
	}
	if m, err := kind.Meta(next); err == nil && len(m.Finalizers) == 0 {
		return nil, fmt.Errorf("%w: the patch removes the last finalizer of an object being deleted, which an apply never does (put the whole object to)", apistore.ErrDeleting)
	}
	return next, nil
}

// mergePatch applies a JSON merge patch (RFC 7386) to doc: objects merge
// key by key, a null in the patch removes the key, anything else replaces.
func mergePatch(doc, patch value) (value, error) {
	p, err := decode(patch)
	if err != nil {
		return nil, fmt.Errorf("%w: patch: %v", store.ErrInvalid, err)
	}
	d, err := decode(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: stored value: %v", store.ErrInvalid, err)
	}
	return json.Marshal(merge(d, p))
}

// decode reads JSON keeping numbers as written (json.Number), so that a
// merge does not round large integers.
func decode(b value) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

func merge(doc, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	dm, ok := doc.(map[string]any)
	if !ok {
		dm = map[string]any{}
	}
	out := make(map[string]any, len(dm)+len(pm))
	for k, v := range dm {
		out[k] = v
	}
	for k, v := range pm {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = merge(out[k], v)
		}
	}
	return out
}
