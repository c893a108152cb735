package httpstore

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/converge-go/converge/store"
)

// The routes of protocol version 1. Reads are GET, writes and progress
// requests POST; every argument but a written value is a query parameter.
const (
	pathGet      = "/v1/get"
	pathList     = "/v1/list"
	pathRevision = "/v1/revision"
	pathCreate   = "/v1/create"
	pathUpdate   = "/v1/update"
	pathDelete   = "/v1/delete"
	pathWatch    = "/v1/watch"
	pathProgress = "/v1/progress"
	pathStatus   = "/v1/status"
	pathIdentity = "/v1/identity"
	pathApply    = "/v1/apply"
	pathCheck    = "/v1/check"
	pathKinds    = "/v1/kinds"
)

// Query parameter names.
const (
	paramKey      = "key"
	paramPrefix   = "prefix"
	paramRevision = "revision"
	paramAfter    = "after"
	paramGuard    = "guard"
	paramWatch    = "watch"
	paramSeq      = "seq"
	// paramPropagation is a delete's propagation (apistore.Propagation).
	paramPropagation = "propagation"
)

// wireObject is a store.Object on the wire. Value is the codec's encoding.
type wireObject struct {
	Key            string          `json:"key"`
	Value          json.RawMessage `json:"value"`
	Revision       int64           `json:"revision"`
	CreateRevision int64           `json:"createRevision"`
	// Deleted is set in the answer of an update that deleted the object
	// (apistore.Replacer: the last finalizer of a marked object removed);
	// Revision is then the delete's.
	Deleted bool `json:"deleted,omitempty"`
}

// wireError is the body of every refused request and the error of a watch's
// end frame. Also lists further conditions the error matches besides its
// code's (alsoDeleting, alsoUnsupported), for clients that know them; a
// client that does not still decides by the code.
type wireError struct {
	Code    string   `json:"code"`
	Message string   `json:"message"`
	Also    []string `json:"also,omitempty"`
	// Fields are the fields a rule refused (apistore.FieldError), at
	// most maxWireFields, for errors.As on the client.
	Fields []wireField `json:"fields,omitempty"`
}

// wireField is an apistore.FieldError on the wire.
type wireField struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

type errorBody struct {
	Error wireError `json:"error"`
}

type listBody struct {
	Objects  []wireObject `json:"objects"`
	Revision int64        `json:"revision"`
}

type revisionBody struct {
	Revision int64 `json:"revision"`
}

// deleteBody answers a delete: the revision of its write, and whether the
// object was only marked for deletion (apistore.PropagatingDeleter).
type deleteBody struct {
	Revision int64 `json:"revision"`
	Marked   bool  `json:"marked,omitempty"`
}

type identityBody struct {
	Identity string `json:"identity"`
}

type kindsBody struct {
	Kinds json.RawMessage `json:"kinds"`
}

// Frame types of a watch stream.
const (
	frameStart    = "start"
	frameCreated  = "created"
	frameUpdated  = "updated"
	frameDeleted  = "deleted"
	frameProgress = "progress"
	framePing     = "ping"
	frameEnd      = "end"
)

// frame is one line of a watch stream.
type frame struct {
	Type string `json:"type"`
	// Object: for created, updated and deleted.
	Object *wireObject `json:"object,omitempty"`
	// Revision: for progress, every change up to it has been sent.
	Revision int64 `json:"revision,omitempty"`
	// Answers: for progress, the highest progress request (seq) it answers.
	Answers int64 `json:"answers,omitempty"`
	// Watch and HeartbeatMillis: for start.
	Watch           string `json:"watch,omitempty"`
	HeartbeatMillis int64  `json:"heartbeatMillis,omitempty"`
	// Error: for end, why the watch ended (none after a clean end).
	Error *wireError `json:"error,omitempty"`
	// Cause: for created, updated and deleted, the traceparent the writer
	// of the revision carried (store.Event.Cause), if any.
	Cause string `json:"cause,omitempty"`
}

// headerTraceparent is the W3C Trace Context header a write's cause
// travels in (store.WithCause): the client sends it, the handler records
// it with the revision the write makes.
const headerTraceparent = "traceparent"

var eventFrames = map[store.EventType]string{
	store.Created: frameCreated,
	store.Updated: frameUpdated,
	store.Deleted: frameDeleted,
}

var frameEvents = map[string]store.EventType{
	frameCreated: store.Created,
	frameUpdated: store.Updated,
	frameDeleted: store.Deleted,
}

// query is a request's parsed query string, checked strictly: a malformed
// escape, an unknown parameter or a repeated one is refused, so that no
// request is read in two ways.
type query struct{ v url.Values }

func parseQuery(raw string, allowed ...string) (query, error) {
	v, err := url.ParseQuery(raw)
	if err != nil {
		return query{}, fmt.Errorf("%w: malformed query string: %v", store.ErrInvalid, err)
	}
	for name, vals := range v {
		i := indexOf(allowed, name)
		if i < 0 {
			return query{}, fmt.Errorf("%w: unknown query parameter %q", store.ErrInvalid, name)
		}
		if name != paramGuard && len(vals) > 1 {
			return query{}, fmt.Errorf("%w: query parameter %q given %d times", store.ErrInvalid, name, len(vals))
		}
	}
	return query{v}, nil
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// str returns the parameter's value; required ones must be present.
func (q query) str(name string, required bool) (string, error) {
	vals, ok := q.v[name]
	if !ok {
		if required {
			return "", fmt.Errorf("%w: missing query parameter %q", store.ErrInvalid, name)
		}
		return "", nil
	}
	return vals[0], nil
}

// int returns the parameter as a decimal int64.
func (q query) int(name string, required bool) (int64, error) {
	s, err := q.str(name, required)
	if err != nil || s == "" && !required {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: query parameter %q: %q is not a decimal integer", store.ErrInvalid, name, s)
	}
	return n, nil
}

// guards returns the guards, each encoded as "mod:REV:KEY" (Revision
// compares the key's last write) or "create:REV:KEY" (CreateRevision); the
// key is everything after the second colon, colons included.
func (q query) guards() ([]store.Guard, error) {
	var gs []store.Guard
	for _, s := range q.v[paramGuard] {
		kind, rest, ok1 := strings.Cut(s, ":")
		rev, key, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 || kind != "mod" && kind != "create" {
			return nil, fmt.Errorf("%w: guard %q: want mod:REVISION:KEY or create:REVISION:KEY", store.ErrInvalid, s)
		}
		n, err := strconv.ParseInt(rev, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: guard %q: revision %q is not a decimal integer", store.ErrInvalid, s, rev)
		}
		gs = append(gs, store.Guard{Key: key, Revision: n, Created: kind == "create"})
	}
	return gs, nil
}

// encodeGuard is the inverse of query.guards for one guard.
func encodeGuard(g store.Guard) string {
	kind := "mod"
	if g.Created {
		kind = "create"
	}
	return kind + ":" + strconv.FormatInt(g.Revision, 10) + ":" + g.Key
}
