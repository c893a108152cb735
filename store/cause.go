package store

import (
	"context"

	"github.com/converge-go/converge/internal/traceparent"
)

// causeKey is the context key of a write's cause.
type causeKey struct{}

// WithCause returns ctx carrying cause, a W3C Trace Context traceparent
// ("00-<trace-id>-<parent-id>-<flags>"), for the writes made with it. A
// store that records causes keeps it with the revision the write makes
// and delivers it with that revision's watch event (Event.Cause), so that
// whoever the change wakes can link its work to the writer's trace. A
// cause is metadata of the revision, not of the object: Get and List do
// not return it. A value that is not a valid traceparent is ignored (ctx is
// returned as it is), as W3C Trace Context asks of a receiver.
//
// The Memory store records causes for as long as it keeps the revision in
// its history (WithHistory: at most that many causes of 55 bytes each);
// boltstore keeps those of its latest 10,000 revisions that had one (or
// of its history, if shorter) in memory, never in its file; httpstore's
// client sends a write's cause in the traceparent header and its handler
// records it in the store it serves, whose watch stream carries it on; a
// store that does not record them (etcdstore) delivers events with no
// cause.
func WithCause(ctx context.Context, cause string) context.Context {
	c, ok := traceparent.Clean(cause)
	if !ok {
		return ctx
	}
	return context.WithValue(ctx, causeKey{}, c)
}

// CauseFrom returns the cause ctx carries (WithCause), "" if none.
func CauseFrom(ctx context.Context) string {
	if ctx == nil {
		return ""
	}
	c, _ := ctx.Value(causeKey{}).(string)
	return c
}
