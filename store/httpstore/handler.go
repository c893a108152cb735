package httpstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/converge-go/converge/internal/httpguard"
	"github.com/converge-go/converge/internal/nilness"
	"github.com/converge-go/converge/store"
)

// Handler serves a store.Store over HTTP; make one with NewHandler. It is
// safe for concurrent use and holds no resources between requests but the
// watches it is serving, each of which ends with its request.
type Handler[T any] struct {
	s       store.Store[T]
	codec   store.Codec[T]
	enc     valueEncoder[T]
	cfg     handlerConfig
	guard   *httpguard.Guard
	watches chan struct{} // one token per watch being served
	streams registry
	ending  shutdowns
	routes  map[string]route[T]
	layer   layerOf[T]
}

type route[T any] struct {
	method string
	write  bool
	serve  func(h *Handler[T], w http.ResponseWriter, r *http.Request) error
}

// NewHandler returns a handler that serves s with the protocol this
// package's Client speaks (see the package documentation). It serves the
// paths /v1/...; to serve it under another path, wrap it in
// http.StripPrefix and give clients the base URL with that path. It fails with
// ErrInvalid for a nil store or a bad option. The handler does not own s:
// closing s is the caller's business, and ends the watches being served.
//
// What s implements beyond store.Store decides the rest of the protocol
// (see "The API-server layer" in the package documentation): status
// writes for an apistore.StatusWriter, applies for an apistore.Applier,
// "deleted" answers for an
// apistore.Replacer, propagations and "marked" answers for an
// apistore.PropagatingDeleter, /v1/identity for a store.Identifier; an
// *apistore.Store is all of them. The others are refused as unsupported.
func NewHandler[T any](s store.Store[T], opts ...HandlerOption) (*Handler[T], error) {
	if nilness.Is(s) {
		return nil, fmt.Errorf("%w: nil store", ErrInvalid)
	}
	codec, guard, cfg, err := newHandlerConfig[T](opts)
	if err != nil {
		return nil, err
	}
	h := &Handler[T]{s: s, codec: codec, enc: newValueEncoder(s, codec), cfg: cfg, guard: guard, watches: make(chan struct{}, cfg.maxWatches), layer: newLayerOf(s)}
	h.routes = map[string]route[T]{
		pathGet:      {http.MethodGet, false, (*Handler[T]).get},
		pathList:     {http.MethodGet, false, (*Handler[T]).list},
		pathRevision: {http.MethodGet, false, (*Handler[T]).revision},
		pathWatch:    {http.MethodGet, false, (*Handler[T]).watch},
		pathProgress: {http.MethodPost, false, (*Handler[T]).progress},
		pathCreate:   {http.MethodPost, true, (*Handler[T]).create},
		pathUpdate:   {http.MethodPost, true, (*Handler[T]).update},
		pathDelete:   {http.MethodPost, true, (*Handler[T]).delete},
		pathStatus:   {http.MethodPost, true, (*Handler[T]).status},
		pathIdentity: {http.MethodGet, false, (*Handler[T]).identity},
		pathApply:    {http.MethodPost, true, (*Handler[T]).apply},
		pathCheck:    {http.MethodPost, true, (*Handler[T]).check},
		pathKinds:    {http.MethodGet, false, (*Handler[T]).kinds},
		pathBatch:    {http.MethodPost, true, (*Handler[T]).batch},
	}
	return h, nil
}

// ServeHTTP serves one request. Every refusal is a JSON error body with a
// 4xx status, decided before the store is called, so a refused request
// changes nothing. What a web page could make a browser send is refused
// before credentials are looked at: a Host the handler does not answer to
// or a POST from another origin (403, ErrForbidden), a POST whose
// Content-Type is not application/json (415, store.ErrInvalid).
func (h *Handler[T]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt, ok := h.routes[r.URL.Path]
	if !ok {
		writeError(w, fmt.Errorf("%w: no such route %q (protocol v1 serves /v1/get, /v1/list, /v1/revision, /v1/identity, /v1/create, /v1/update, /v1/status, /v1/apply, /v1/delete, /v1/check, /v1/batch, /v1/watch, /v1/progress, /v1/kinds)", store.ErrInvalid, r.URL.Path), http.StatusNotFound)
		return
	}
	if err := h.guard.Check(r); err != nil {
		writeError(w, fmt.Errorf("%w: %w", ErrForbidden, err), http.StatusForbidden)
		return
	}
	if r.Method != rt.method {
		w.Header().Set("Allow", rt.method)
		writeError(w, fmt.Errorf("%w: %s wants method %s, not %s", store.ErrInvalid, r.URL.Path, rt.method, r.Method), http.StatusMethodNotAllowed)
		return
	}
	if err := httpguard.RequireJSON(r); err != nil {
		writeError(w, fmt.Errorf("%w: %w", store.ErrInvalid, err), http.StatusUnsupportedMediaType)
		return
	}
	acc, err := h.cfg.creds.authorize(r)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="httpstore"`)
		writeError(w, err, 0)
		return
	}
	if rt.write && acc < accessWrite {
		writeError(w, fmt.Errorf("%w: the token may only read", ErrForbidden), 0)
		return
	}
	if tp := r.Header.Get(headerTraceparent); rt.write && tp != "" {
		// The write's cause, recorded with its revision (store.WithCause
		// ignores a value that is not a traceparent).
		r = r.WithContext(store.WithCause(r.Context(), tp))
	}
	if err := rt.serve(h, w, r); err != nil {
		writeError(w, err, 0)
	}
}

// writeError answers with err's code and message; a status of 0 means the
// one the code implies.
func writeError(w http.ResponseWriter, err error, status int) {
	_, st := codeOf(err)
	var se *statusError
	switch {
	case status != 0:
	case errors.As(err, &se):
		status = se.status
	default:
		status = st
	}
	writeJSON(w, status, errorBody{Error: wireErrorOf(err)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := getBuf()
	defer putBuf(buf)
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		// Only wire types are answered, and they always encode.
		buf.Reset()
		_ = json.NewEncoder(buf).Encode(errorBody{Error: wireError{Code: codeInternal, Message: "httpstore: the answer does not encode"}})
		status = http.StatusInternalServerError
	}
	writeBody(w, status, buf)
}

// object encodes obj for the wire.
func (h *Handler[T]) object(obj store.Object[T]) (wireObject, error) {
	b, err := h.enc.marshal(obj.Value)
	if err != nil {
		return wireObject{}, fmt.Errorf("httpstore: encode the value of %q: %w", obj.Key, err)
	}
	return wireObject{Key: obj.Key, Value: b, Revision: obj.Revision, CreateRevision: obj.CreateRevision}, nil
}

func (h *Handler[T]) get(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r.URL.RawQuery, paramKey)
	if err != nil {
		return err
	}
	key, err := q.str(paramKey, true)
	if err != nil {
		return err
	}
	obj, err := h.s.Get(r.Context(), key)
	if err != nil {
		return err
	}
	wo, err := h.object(obj)
	if err != nil {
		return err
	}
	return writeObject(w, http.StatusOK, &wo, h.enc.trusted)
}

func (h *Handler[T]) list(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r.URL.RawQuery, paramPrefix)
	if err != nil {
		return err
	}
	prefix, err := q.str(paramPrefix, false)
	if err != nil {
		return err
	}
	objs, rev, err := h.s.List(r.Context(), prefix)
	if err != nil {
		return err
	}
	buf := getBuf()
	defer putBuf(buf)
	buf.WriteString(`{"objects":[`)
	for i, obj := range objs {
		wo, err := h.object(obj)
		if err != nil {
			return err
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := appendObject(buf, &wo, h.enc.trusted); err != nil {
			return err
		}
	}
	buf.WriteString(`],"revision":`)
	buf.Write(strconv.AppendInt(buf.AvailableBuffer(), rev, 10))
	buf.WriteString("}\n")
	writeBody(w, http.StatusOK, buf)
	return nil
}

func (h *Handler[T]) revision(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseQuery(r.URL.RawQuery); err != nil {
		return err
	}
	rev, err := h.s.Revision(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, revisionBody{Revision: rev})
	return nil
}

// writeArgs are the parsed arguments of a write, all checked before the
// store is called.
type writeArgs[T any] struct {
	key      string
	revision int64
	guards   []store.Guard
	value    T
	encoded  []byte // the value as the codec keeps it (decodeValue)
	q        query  // for the route's own parameters (extra)
}

// parseWrite reads a write's query, which may also hold the parameters
// extra, and, if withValue, its body (see decodeValue).
func (h *Handler[T]) parseWrite(w http.ResponseWriter, r *http.Request, withRevision, withValue bool, extra ...string) (writeArgs[T], error) {
	var a writeArgs[T]
	allowed := append([]string{paramKey, paramGuard}, extra...)
	if withRevision {
		allowed = append(allowed, paramRevision)
	}
	q, err := parseQuery(r.URL.RawQuery, allowed...)
	if err != nil {
		return a, err
	}
	a.q = q
	if a.key, err = q.str(paramKey, true); err != nil {
		return a, err
	}
	if withRevision {
		if a.revision, err = q.int(paramRevision, true); err != nil {
			return a, err
		}
	}
	if a.guards, err = q.guards(); err != nil {
		return a, err
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.maxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return a, &statusError{fmt.Errorf("%w: request body exceeds %d bytes", store.ErrInvalid, tooBig.Limit), http.StatusRequestEntityTooLarge}
	case err != nil:
		return a, fmt.Errorf("%w: reading the request body: %v", store.ErrInvalid, err)
	case !withValue && len(body) > 0:
		return a, fmt.Errorf("%w: %s takes no request body", store.ErrInvalid, r.URL.Path)
	case !withValue:
		return a, nil
	}
	a.value, a.encoded, err = h.decodeValue(body)
	return a, err
}

// decodeValue decodes a written value and returns it with its encoding,
// refusing, with an error matching store.ErrInvalid, what the store would
// not give back exactly: the body must be valid UTF-8 (encoding/json
// would otherwise read a different string than was sent), decode with the
// codec, and encode again as the same JSON value (sameValue). A store that
// checks values with the wire codec itself (valueEncoder.trusted) is left
// to refuse what store.JSON refuses; its encoding is then plain
// encoding/json's, as that store's is.
func (h *Handler[T]) decodeValue(body []byte) (T, []byte, error) {
	var zero T
	if !utf8.Valid(body) {
		return zero, nil, fmt.Errorf("%w: the request body is not valid UTF-8", store.ErrInvalid)
	}
	v, err := h.codec.Unmarshal(body)
	if err != nil {
		return zero, nil, fmt.Errorf("%w: malformed value: %v", store.ErrInvalid, err)
	}
	if err := store.ValidateValue(v); err != nil {
		return zero, nil, err
	}
	var again []byte
	if h.enc.trusted {
		if again, err = json.Marshal(v); err != nil {
			return zero, nil, fmt.Errorf("%w: encode value: %v", store.ErrInvalid, err)
		}
	} else if again, err = h.codec.Marshal(v); err != nil {
		return zero, nil, err
	}
	if err := sameValue(body, again); err != nil {
		return zero, nil, err
	}
	return v, again, nil
}

// statusError is an error answered with a status other than its code's.
type statusError struct {
	err    error
	status int
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

func (h *Handler[T]) create(w http.ResponseWriter, r *http.Request) error {
	return h.writeWith(w, r, false, http.StatusCreated, func(a writeArgs[T]) (store.Object[T], error) {
		return h.s.Create(r.Context(), a.key, a.value, a.guards...)
	})
}

// writeWith serves a write of a value: it parses the request (with a
// revision if withRevision), makes the write with do and answers with the
// object written, under status code.
func (h *Handler[T]) writeWith(w http.ResponseWriter, r *http.Request, withRevision bool, code int, do func(a writeArgs[T]) (store.Object[T], error)) error {
	a, err := h.parseWrite(w, r, withRevision, true)
	if err != nil {
		return err
	}
	obj, err := do(a)
	if err != nil {
		return err
	}
	wo, err := h.written(a, obj)
	if err != nil {
		return err
	}
	return writeObject(w, code, &wo, h.enc.trusted)
}

// update serves Update, or Replace when the store has it (the layer's:
// removing the last finalizer of a marked object deletes it), whose answer
// then says "deleted".
func (h *Handler[T]) update(w http.ResponseWriter, r *http.Request) error {
	a, err := h.parseWrite(w, r, true, true)
	if err != nil {
		return err
	}
	var obj store.Object[T]
	deleted := false
	if h.layer.replacer != nil {
		obj, deleted, err = h.layer.replacer.Replace(r.Context(), a.key, a.value, a.revision, a.guards...)
	} else {
		obj, err = h.s.Update(r.Context(), a.key, a.value, a.revision, a.guards...)
	}
	if err != nil {
		return err
	}
	wo, err := h.written(a, obj)
	if err != nil {
		return err
	}
	wo.Deleted = deleted
	return writeObject(w, http.StatusOK, &wo, h.enc.trusted)
}

// check serves Check (store.Checker): the key's revision and the guards,
// checked by the served store without writing, atomically if it is a
// store.Checker (see store.Check). The answer is the revision checked.
func (h *Handler[T]) check(w http.ResponseWriter, r *http.Request) error {
	a, err := h.parseWrite(w, r, true, false)
	if err != nil {
		return err
	}
	if err := store.Check(r.Context(), h.s, a.key, a.revision, a.guards...); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, revisionBody{Revision: a.revision})
	return nil
}

// delete serves Delete and DeleteWith (see deleteWith).
func (h *Handler[T]) delete(w http.ResponseWriter, r *http.Request) error {
	a, err := h.parseWrite(w, r, true, false, paramPropagation)
	if err != nil {
		return err
	}
	p, err := parsePropagation(a.q)
	if err != nil {
		return err
	}
	body, err := h.deleteWith(r, a, p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}
