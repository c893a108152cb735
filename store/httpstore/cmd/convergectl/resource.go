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

// specWrite returns what applying doc over cur stores, as the layer
// computes it (a server with the layer computes it again, and owns the
// result): doc's spec, finalizers and owners, cur's status and deletion
// mark, and cur's generation, bumped by one if the spec changed. If
// nothing is stored (exists false), doc's spec and metadata at generation
// 1, without status. doc's own status members are never written.
func specWrite(doc, cur value, exists bool) (value, error) {
	m, err := kind.Meta(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", errInvalid, reason(err))
	}
	base := value(`{}`)
	m.Generation, m.Deletion = 1, nil
	if exists {
		stored, err := kind.Meta(cur)
		if err != nil {
			return nil, fmt.Errorf("%w: the stored value is no resource: %s", errInvalid, reason(err))
		}
		same, err := kind.SameSpec(doc, cur)
		if err != nil {
			return nil, fmt.Errorf("%w: %s", errInvalid, reason(err))
		}
		m.Generation, m.Deletion = stored.Generation, stored.Deletion
		if !same {
			m.Generation++
		}
		base = cur
	}
	merged, err := kind.Merge(doc, base)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", errInvalid, reason(err))
	}
	return kind.WithMeta(merged, m)
}

// replacing is the client whose Update is Replace, recording whether the
// last one deleted the object, so that store.CreateOrUpdate's retry loop
// can run apply's writes.
type replacing struct {
	*httpstore.Client[value]
	deleted bool
}

func (r *replacing) Update(ctx context.Context, key string, v value, revision int64, guards ...store.Guard) (store.Object[value], error) {
	obj, deleted, err := r.Replace(ctx, key, v, revision, guards...)
	r.deleted = deleted
	return obj, err
}

// applyResource writes doc's spec and metadata over the object at key,
// creating it if absent, against the revision read, retried if another
// writer got there first. deleted reports that the write removed the last
// finalizer of a marked object, which deleted it.
func (c *cli) applyResource(ctx context.Context, key string, doc value) (obj store.Object[value], deleted bool, err error) {
	if _, err := specWrite(doc, nil, false); err != nil {
		return obj, false, err // refused before anything is read
	}
	r := &replacing{Client: c.s}
	obj, err = store.CreateOrUpdate(ctx, r, key, func(cur value, exists bool) (value, error) {
		return specWrite(doc, cur, exists)
	})
	return obj, err == nil && r.deleted, err
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
