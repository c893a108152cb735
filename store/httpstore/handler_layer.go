package httpstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// layerOf is what the served store offers beyond store.Store: the writes
// of the API-server layer (store/apistore) and an identity. A nil field
// is a route the handler refuses as unsupported.
type layerOf[T any] struct {
	status   apistore.StatusWriter[T]
	applier  apistore.Applier[T]
	replacer apistore.Replacer[T]
	deleter  apistore.PropagatingDeleter
	identity store.Identifier
}

func newLayerOf[T any](s store.Store[T]) layerOf[T] {
	var l layerOf[T]
	l.status, _ = s.(apistore.StatusWriter[T])
	l.applier, _ = s.(apistore.Applier[T])
	l.replacer, _ = s.(apistore.Replacer[T])
	l.deleter, _ = s.(apistore.PropagatingDeleter)
	l.identity, _ = s.(store.Identifier)
	return l
}

// rewrites reports whether the store may keep something other than the
// value written: the layer sets the generation and the deletion mark and
// keeps the stored status or spec. Its writes are then answered with the
// value as stored rather than as sent.
func (l layerOf[T]) rewrites() bool {
	return l.status != nil || l.replacer != nil || l.applier != nil
}

// unsupported is the refusal of a route the served store does not serve:
// 404 (as a route the handler does not know), code "invalid" with
// "unsupported" also, matching store.ErrInvalid and errors.ErrUnsupported
// on the client. It is decided before the store is called, so it changes
// nothing.
func unsupported(path, what string) error {
	return &statusError{fmt.Errorf("%w: %w: %s: the served store %s", ErrInvalid, errors.ErrUnsupported, path, what), http.StatusNotFound}
}

// written is the wire object answering a write of a that the store
// accepted as obj: a's encoding, which is what a store that does not
// rewrite keeps (see layerOf.rewrites), else obj's value encoded. A value
// that then does not encode is an internal error that says the write was
// made: it must not read as a refusal (invalid), which changes nothing.
func (h *Handler[T]) written(a writeArgs[T], obj store.Object[T]) (wireObject, error) {
	if !h.layer.rewrites() {
		return wireObject{Key: obj.Key, Value: a.encoded, Revision: obj.Revision, CreateRevision: obj.CreateRevision}, nil
	}
	wo, err := h.object(obj)
	if err != nil {
		return wo, fmt.Errorf("httpstore: %q was written at revision %d, but the answer cannot carry it: %v", obj.Key, obj.Revision, err)
	}
	return wo, nil
}

// status serves UpdateStatus: the status of the body over the stored spec
// and metadata, at the revision given.
func (h *Handler[T]) status(w http.ResponseWriter, r *http.Request) error {
	if h.layer.status == nil {
		return unsupported(pathStatus, "has no status writes (serve an apistore.Store)")
	}
	return h.writeWith(w, r, true, http.StatusOK, func(a writeArgs[T]) (store.Object[T], error) {
		return h.layer.status.UpdateStatus(r.Context(), a.key, a.value, a.revision, a.guards...)
	})
}

// apply serves Apply: what the body states, written over the stored
// object (or created) by the layer's rule, retried there on conflict.
func (h *Handler[T]) apply(w http.ResponseWriter, r *http.Request) error {
	if h.layer.applier == nil {
		return unsupported(pathApply, "has no apply (serve an apistore.Store)")
	}
	return h.writeWith(w, r, false, http.StatusOK, func(a writeArgs[T]) (store.Object[T], error) {
		return h.layer.applier.Apply(r.Context(), a.key, a.value, a.guards...)
	})
}

// identity serves the store's identity (store.Identifier).
func (h *Handler[T]) identity(w http.ResponseWriter, r *http.Request) error {
	if h.layer.identity == nil {
		return unsupported(pathIdentity, "has no identity (store.Identifier)")
	}
	if _, err := parseQuery(r.URL.RawQuery); err != nil {
		return err
	}
	id, err := h.layer.identity.Identity(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, identityBody{Identity: id})
	return nil
}

// kinds answers the kinds document given by WithKinds.
func (h *Handler[T]) kinds(w http.ResponseWriter, r *http.Request) error {
	if h.cfg.kinds == nil {
		return unsupported(pathKinds, "declares no kinds (WithKinds)")
	}
	if _, err := parseQuery(r.URL.RawQuery); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, kindsBody{Kinds: h.cfg.kinds})
	return nil
}

// isJSONObject reports whether doc is one JSON object.
func isJSONObject(doc []byte) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(doc, &m) == nil && m != nil
}

// parsePropagation reads a delete's propagation parameter: absent or ""
// gives none (""); an unknown one is refused, whatever the store.
func parsePropagation(q query) (apistore.Propagation, error) {
	s, err := q.str(paramPropagation, false)
	if err != nil {
		return "", err
	}
	return checkPropagation(apistore.Propagation(s))
}

// checkPropagation returns p, or an error matching store.ErrInvalid for a
// propagation apistore does not know. "" gives none: the layer keeps the
// object's own garbage-collector finalizer, whereas an explicit
// Background removes it.
func checkPropagation(p apistore.Propagation) (apistore.Propagation, error) {
	switch p {
	case "", apistore.Background, apistore.Foreground, apistore.Orphan:
		return p, nil
	}
	return "", fmt.Errorf("%w: unknown propagation %q: want background, foreground or orphan", ErrInvalid, string(p))
}

// deleteWith deletes with propagation p: through the store's DeleteWith if
// it has one, else with Delete, which only Background (or "") is.
func (h *Handler[T]) deleteWith(r *http.Request, a writeArgs[T], p apistore.Propagation) (deleteBody, error) {
	if h.layer.deleter != nil {
		rev, marked, err := h.layer.deleter.DeleteWith(r.Context(), a.key, a.revision, p, a.guards...)
		return deleteBody{Revision: rev, Marked: marked}, err
	}
	if p != "" && p != apistore.Background {
		return deleteBody{}, unsupported(pathDelete, fmt.Sprintf("has no %s deletion (serve an apistore.Store)", p))
	}
	rev, err := h.s.Delete(r.Context(), a.key, a.revision, a.guards...)
	return deleteBody{Revision: rev}, err
}
