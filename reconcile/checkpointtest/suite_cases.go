package checkpointtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/checkpoint"
	"github.com/converge-go/converge/store/storetest"
)

// write is one write of a case: key set to n, or deleted (n 0).
type write struct {
	key string
	n   int
}

// The store's history in every case: two keys (copied), then the state the
// checkpoint holds (copied from the store as a controller would have
// written it), then the case's writes, then, once the store serves
// again, later writes.
var (
	toEarly      = []write{{"a", 1}, {"b", 1}}
	toCheckpoint = []write{{"a", 2}, {"c", 1}, {"d", 1}, {"b", 0}}
	later        = []write{{"a", 50}, {"z", 1}}
)

// storeCase is what becomes of the store while the controller runs from
// its checkpoint.
type storeCase struct {
	name string
	// after are the writes made after the checkpoint, before the store
	// stops.
	after []write
	// serve serves the stopped store again: copies holds "empty" (made
	// before any write) and "early" (after toEarly).
	serve func(ctx context.Context, t *testing.T, b Backend, copies map[string]func(t *testing.T))
	// history is what Health.History must say once the store serves, if
	// the controller ran from the checkpoint ("": no other history).
	history store.HistoryReason
}

var storeCases = []storeCase{
	{
		name:  "RolledBackUnderTheSameIdentity",
		after: []write{{"a", 3}, {"e", 1}},
		serve: func(_ context.Context, t *testing.T, _ Backend, copies map[string]func(*testing.T)) {
			copies["early"](t)
		},
		history: store.RolledBack,
	},
	{
		name: "RolledBackToEmpty",
		serve: func(_ context.Context, t *testing.T, _ Backend, copies map[string]func(*testing.T)) {
			copies["empty"](t)
		},
		history: store.RolledBack,
	},
	{
		name:  "RolledForward",
		after: []write{{"a", 3}, {"d", 0}, {"e", 1}},
		serve: func(_ context.Context, t *testing.T, b Backend, _ map[string]func(*testing.T)) { b.Start(t) },
	},
	{
		name:  "ReplacedByAnotherIdentity",
		after: []write{{"a", 3}},
		serve: func(ctx context.Context, t *testing.T, b Backend, _ map[string]func(*testing.T)) {
			b.StartFresh(t)
			apply(ctx, t, b.Store(), []write{{"a", 7}, {"f", 1}})
		},
		history: store.AnotherIdentity,
	},
	{
		name:  "Emptied",
		after: []write{{"a", 0}, {"c", 0}, {"d", 0}},
		serve: func(_ context.Context, t *testing.T, b Backend, _ map[string]func(*testing.T)) { b.Start(t) },
	},
}

// startCase is how the controller starts: from a checkpoint seen when,
// used or refused, or (listed) without one, from the store it lists
// before the store stops.
type startCase struct {
	name   string
	maxAge time.Duration
	seen   func(now time.Time, maxAge time.Duration) time.Time
	used   bool
	// refusal is the error the refusal must name.
	refusal error
	listed  bool
}

var (
	seenInThePast = startCase{name: "SeenInThePast", used: true,
		seen: func(now time.Time, _ time.Duration) time.Time { return now.Add(-time.Minute) }}
	startCases = []startCase{
		{name: "ListedBeforeTheStoreStopped", used: true, listed: true,
			seen: func(now time.Time, _ time.Duration) time.Time { return now }},
		{name: "SeenInTheFuture", maxAge: time.Second, refusal: checkpoint.ErrFuture,
			seen: func(now time.Time, _ time.Duration) time.Time { return now.AddDate(1, 0, 0) }},
		{name: "SeenAMinuteShortOfItsMaximumAge", maxAge: time.Hour, used: true,
			seen: func(now time.Time, maxAge time.Duration) time.Time { return now.Add(time.Minute - maxAge) }},
		{name: "SeenPastItsMaximumAge", maxAge: time.Hour, refusal: checkpoint.ErrTooOld,
			seen: func(now time.Time, maxAge time.Duration) time.Time { return now.Add(-maxAge - time.Second) }},
	}
)

// apply makes writes to s and returns the revision of the last.
func apply(ctx context.Context, t *testing.T, s store.Store[*storetest.Value], writes []write) int64 {
	t.Helper()
	var rev int64
	for _, w := range writes {
		cur, err := s.Get(ctx, w.key)
		switch {
		case errors.Is(err, store.ErrNotFound) && w.n != 0:
			cur, err = s.Create(ctx, w.key, &storetest.Value{N: w.n})
			rev = cur.Revision
		case err != nil:
		case w.n == 0:
			rev, err = s.Delete(ctx, w.key, cur.Revision)
		default:
			cur, err = s.Update(ctx, w.key, &storetest.Value{N: w.n}, cur.Revision)
			rev = cur.Revision
		}
		if err != nil {
			t.Fatalf("write %s=%d: %v", w.key, w.n, err)
		}
	}
	return rev
}

// identityOf returns s's identity ("" for none).
func identityOf(ctx context.Context, t *testing.T, s store.Store[*storetest.Value]) string {
	t.Helper()
	idr, ok := s.(store.Identifier)
	if !ok {
		return ""
	}
	id, err := idr.Identity(ctx)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return ""
	case err != nil:
		t.Fatalf("Identity: %v", err)
	}
	return id
}

// stateOf returns s's objects as the checkpoint of a controller of the
// whole store, seen at seen.
func stateOf(ctx context.Context, t *testing.T, s store.Store[*storetest.Value], identity string, seen time.Time) checkpoint.State[*storetest.Value] {
	t.Helper()
	objs, rev, err := s.List(ctx, "")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	return checkpoint.State[*storetest.Value]{Identity: identity, Revision: rev, Seen: seen, Objects: objs}
}
