package httpstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/converge-go/converge/internal/invalid"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// Errors of the HTTP layer. A Client returns them (wrapped with detail);
// test for them with errors.Is. Every store error (store.ErrNotFound,
// store.ErrConflict, ...) crosses the wire and comes back as itself.
var (
	// ErrUnauthorized: the request carried no token, or one the server does
	// not know (HTTP 401). Nothing was read or written. A 401 answered by a
	// server in front of the handler (a reconcile/manager server with
	// Tokens, a proxy) in its own words is ErrUnauthorized too, with its
	// text (at most 200 bytes) in the message; it never matches
	// store.ErrUnavailable, so a caller that retries an unavailable store
	// does not retry a refused token.
	ErrUnauthorized = errors.New("httpstore: unauthorized")
	// ErrForbidden: the request may not do what it asks (HTTP 403), and
	// nothing was read or written: the token is valid but only for reading
	// and the request writes; or the request is one a web page could have
	// made a browser send, whatever its credentials: its Host header names
	// a host the server does not answer to (WithAllowedHosts), or it writes
	// from another origin (WithTrustedOrigins). The message names the
	// cause. A 403 answered by a server in front of the handler (a
	// reconcile/manager server's Host and origin guard, a proxy) in its
	// own words is ErrForbidden too, as ErrUnauthorized is for a 401.
	ErrForbidden = errors.New("httpstore: forbidden")
	// ErrTooManyWatches: the server already serves as many watches as it
	// allows (HTTP 429). The error also matches store.ErrUnavailable, so a
	// consumer that retries unavailable stores retries it too.
	ErrTooManyWatches = errors.New("httpstore: too many watches")
	// ErrProtocol: the server's answer is not this package's protocol (a
	// wrong URL, a proxy's error page, a truncated body, a bad frame). It
	// also matches store.ErrUnavailable: for a write, the outcome is
	// unknown. A value the client's codec cannot decode (a client of
	// another type or codec than the server's) is ErrProtocol but not
	// store.ErrUnavailable: asking again would not help.
	ErrProtocol = errors.New("httpstore: unexpected response")
	// ErrInvalid is returned for bad options and matches store.ErrInvalid.
	ErrInvalid error = invalid.New("httpstore")
)

// Error codes: the "code" of a JSON error body, one per error a client can
// tell apart. The HTTP status is a hint for people and proxies; clients
// decide by the code alone, so that a 404 from a wrong URL is never taken
// for store.ErrNotFound.
const (
	codeInvalid        = "invalid"
	codeNotFound       = "not_found"
	codeExists         = "exists"
	codeConflict       = "conflict"
	codeGuardFailed    = "guard_failed"
	codeCompacted      = "compacted"
	codeLagging        = "lagging"
	codeUnavailable    = "unavailable"
	codeUnauthorized   = "unauthorized"
	codeForbidden      = "forbidden"
	codeTooManyWatches = "too_many_watches"
	codeInternal       = "internal"
)

// errorCodes lists, in the order they are tried, the errors a server names
// by code and the status it answers with.
var errorCodes = []struct {
	err    error
	code   string
	status int
}{
	{store.ErrInvalid, codeInvalid, http.StatusBadRequest},
	{store.ErrNotFound, codeNotFound, http.StatusNotFound},
	{store.ErrExists, codeExists, http.StatusConflict},
	{store.ErrConflict, codeConflict, http.StatusConflict},
	{store.ErrGuardFailed, codeGuardFailed, http.StatusPreconditionFailed},
	{store.ErrCompacted, codeCompacted, http.StatusGone},
	{store.ErrLagging, codeLagging, http.StatusServiceUnavailable},
	{store.ErrUnavailable, codeUnavailable, http.StatusServiceUnavailable},
	{context.DeadlineExceeded, codeUnavailable, http.StatusServiceUnavailable},
	{context.Canceled, codeUnavailable, http.StatusServiceUnavailable},
	{ErrUnauthorized, codeUnauthorized, http.StatusUnauthorized},
	{ErrForbidden, codeForbidden, http.StatusForbidden},
	{ErrTooManyWatches, codeTooManyWatches, http.StatusTooManyRequests},
}

// codeOf returns the code and status that describe err.
func codeOf(err error) (code string, status int) {
	for _, c := range errorCodes {
		if errors.Is(err, c.err) {
			return c.code, c.status
		}
	}
	return codeInternal, http.StatusInternalServerError
}

// Conditions a wire error may name in its "also" list, besides its code:
// each is a sentinel the error matches on the server and again on the
// client.
var alsoConditions = []struct {
	name string
	err  error
}{
	// The object is marked for deletion (with code "exists" for a create,
	// "invalid" for a finalizer added).
	{"deleting", apistore.ErrDeleting},
	// A kind's admission refused the object (with code "invalid"; the
	// message names the fields at fault).
	{"rejected", apistore.ErrRejected},
	// The served store does not do what the route asks (with code
	// "invalid"): errors.ErrUnsupported.
	{"unsupported", errors.ErrUnsupported},
}

// wireErrorOf describes err for the wire: its code and message, and the
// further conditions it matches.
func wireErrorOf(err error) wireError {
	code, _ := codeOf(err)
	we := wireError{Code: code, Message: err.Error()}
	for _, c := range alsoConditions {
		if errors.Is(err, c.err) {
			we.Also = append(we.Also, c.name)
		}
	}
	if code == codeInvalid {
		we.Fields = fieldsOf(err, nil)
	}
	return we
}

// maxWireFields bounds the field errors an error carries on the wire.
const maxWireFields = 20

// fieldsOf appends to fields the apistore.FieldErrors in err's tree, up to
// maxWireFields.
func fieldsOf(err error, fields []wireField) []wireField {
	if fe, ok := err.(*apistore.FieldError); ok && len(fields) < maxWireFields {
		return append(fields, wireField{Field: fe.Field, Reason: fe.Reason})
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if inner := u.Unwrap(); inner != nil {
			fields = fieldsOf(inner, fields)
		}
	case interface{ Unwrap() []error }:
		for _, inner := range u.Unwrap() {
			if inner != nil {
				fields = fieldsOf(inner, fields)
			}
		}
	}
	return fields
}

// remoteError is an error the server reported: its message is the server's,
// and it matches the sentinels its code names.
type remoteError struct {
	msg  string
	errs []error
}

func (e *remoteError) Error() string   { return e.msg }
func (e *remoteError) Unwrap() []error { return e.errs }

// decode turns an error from the wire back into one matching the same
// sentinels as on the server: its code's, and those of the conditions in
// its also list that this client knows (others are ignored).
func (we wireError) decode() error {
	err := decodeError(we.Code, we.Message)
	re, ok := err.(*remoteError)
	if !ok {
		return err
	}
	for _, name := range we.Also {
		for _, c := range alsoConditions {
			if c.name == name {
				re.errs = append(re.errs, c.err)
			}
		}
	}
	if we.Code == codeInvalid {
		for _, f := range we.Fields[:min(len(we.Fields), maxWireFields)] {
			re.errs = append(re.errs, &apistore.FieldError{Field: f.Field, Reason: f.Reason})
		}
	}
	return re
}

// decodeError turns a code and message from the wire back into an error
// matching the same sentinels as on the server.
func decodeError(code, msg string) error {
	if msg == "" {
		msg = "httpstore: server error " + code
	}
	switch code {
	case codeTooManyWatches:
		return &remoteError{msg, []error{ErrTooManyWatches, store.ErrUnavailable}}
	case codeInternal:
		return &remoteError{msg, nil}
	}
	for _, c := range errorCodes {
		if c.code == code {
			return &remoteError{msg, []error{c.err}}
		}
	}
	return protocolErrorf("error code %q, unknown to this client: %s", code, strings.TrimPrefix(msg, pkgPrefix))
}

// pkgPrefix starts the message of every error this package makes.
const pkgPrefix = "httpstore: "

// protocolError is an answer that is not this package's protocol. Its
// message is ErrProtocol's followed by the detail, and it matches
// ErrProtocol, store.ErrUnavailable (for a write, the outcome is unknown)
// and whatever the detail wraps.
type protocolError struct{ detail error }

func (e *protocolError) Error() string { return ErrProtocol.Error() + ": " + e.detail.Error() }
func (e *protocolError) Unwrap() []error {
	return []error{ErrProtocol, store.ErrUnavailable, e.detail}
}

// protocolErrorf returns a protocolError whose detail is fmt.Errorf's.
func protocolErrorf(format string, args ...any) error {
	return &protocolError{fmt.Errorf(format, args...)}
}

// contextError is an error told within a context ("watch: progress
// request"): its message names the package once, then the context, then
// the error's message without the package prefix or the context's first
// word ("watch: ") it may start with. It matches what the error matches.
type contextError struct {
	context string
	err     error
}

func (e *contextError) Error() string {
	rest := strings.TrimPrefix(e.err.Error(), pkgPrefix)
	if op, _, ok := strings.Cut(e.context, ": "); ok {
		rest = strings.TrimPrefix(rest, op+": ")
	}
	return pkgPrefix + e.context + ": " + rest
}
func (e *contextError) Unwrap() error { return e.err }

// withContext returns err told within context (see contextError).
func withContext(err error, context string) error {
	return &contextError{context: context, err: err}
}
