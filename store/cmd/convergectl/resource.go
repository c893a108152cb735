package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore"
)

// Resources are JSON documents of the API-server layer's shape
// (apistore.JSONKind): {"metadata":{...},"spec":...} and status members,
// every member but those two.
var kind apistore.JSONKind

// isResource reports whether v is a resource document: a JSON object with
// a "metadata" or a "spec" member.
func isResource(v value) bool {
	var members map[string]json.RawMessage
	if json.Unmarshal(v, &members) != nil {
		return false
	}
	_, md := members["metadata"]
	_, spec := members["spec"]
	return md || spec
}

// reason returns what err, an error of apistore.JSONKind, says beyond the
// package prefixes it starts with, for a message that names convergectl
// alone.
func reason(err error) string {
	msg := err.Error()
	for _, prefix := range []string{store.ErrInvalid.Error() + ": ", "apistore: "} {
		msg = strings.TrimPrefix(msg, prefix)
	}
	return msg
}

// applyResource makes the object at key hold what doc states, by the
// layer's rule (apistore.Store.Apply): doc's spec, the stored status,
// doc's finalizers and owners added to the stored ones, none removed, so
// that an apply never completes a deletion. A server with the layer
// computes the write and retries it; against one without, convergectl
// computes it as the layer would (applyWithout).
func (c *cli) applyResource(ctx context.Context, key string, doc value) (store.Object[value], error) {
	if _, err := kind.Meta(doc); err != nil {
		return store.Object[value]{}, fmt.Errorf("%w: %s", errInvalid, reason(err)) // refused before anything is sent
	}
	obj, err := c.s.Apply(ctx, key, doc)
	if errors.Is(err, errors.ErrUnsupported) {
		return c.applyWithout(ctx, key, doc)
	}
	return obj, err
}

// applyWithout applies doc at key on a server without the layer: a
// compare-and-swap of what the layer would write (applied) against the
// revision read, retried if another writer got there first.
func (c *cli) applyWithout(ctx context.Context, key string, doc value) (store.Object[value], error) {
	return store.CreateOrUpdate(ctx, c.s, key, func(cur value, exists bool) (value, error) {
		return applied(doc, cur, exists)
	})
}

// applied returns what applying doc over cur stores, as the layer computes
// it: apistore.Applied, with cur's generation bumped by one if the spec
// changed. If nothing is stored (exists false), doc's spec and metadata at
// generation 1, without status.
func applied(doc, cur value, exists bool) (value, error) {
	if !exists {
		m, err := kind.Meta(doc)
		if err != nil {
			return nil, fmt.Errorf("%w: %s", errInvalid, reason(err))
		}
		m.Generation, m.Deletion = 1, nil
		v, err := kind.WithoutStatus(doc)
		if err != nil {
			return nil, fmt.Errorf("%w: %s", errInvalid, reason(err))
		}
		return kind.WithMeta(v, m)
	}
	v, err := apistore.Applied[value](kind, doc, cur)
	if errors.Is(err, apistore.ErrDeleting) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s", errInvalid, reason(err))
	}
	same, err := kind.SameSpec(v, cur)
	if err != nil || same {
		return v, err
	}
	m, err := kind.Meta(v)
	if err != nil {
		return nil, err
	}
	m.Generation++
	return kind.WithMeta(v, m)
}

// statusWriting is the client whose Update writes the status alone, so
// that store.Modify's retry loop can run status's writes.
type statusWriting struct{ *httpstore.Client[value] }

func (s statusWriting) Update(ctx context.Context, key string, v value, revision int64, guards ...store.Guard) (store.Object[value], error) {
	return s.UpdateStatus(ctx, key, v, revision, guards...)
}

// errNoLayer explains a refused status write or propagation.
var errNoLayer = errors.New("the server applies no API-server layer")

// withoutLayer adds what a refusal as unsupported means to err.
func withoutLayer(err error) error {
	if errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("%w: %w", errNoLayer, err)
	}
	return err
}
