package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/converge-go/converge/store"
)

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
