// Package storetest is the conformance suite for store.Store backends: one
// call runs a sub-test for every clause of the Store contract against fresh
// stores made by the caller's factory.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store[*storetest.Value] {
//			s := mybackend.Open(...)
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The suite talks to real backends (files, networks), so it runs in real time,
// never in a synctest bubble. It never sleeps and asserts no durations: time
// appears only as a generous limit on waits for watch events, after which a
// test fails instead of hanging. It takes well under five seconds for an
// in-memory or embedded backend.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/converge-go/converge/store"
)

// Value is the payload type the suite stores. Its pointer type is used so
// that nil values are exercised.
type Value struct {
	N int    `json:"n"`
	S string `json:"s"`
}

// Compactor is implemented by backends whose change history can be compacted
// on demand. The suite uses it to exercise ErrCompacted and skips those tests
// for backends without it.
type Compactor interface {
	// Compact discards the history up to and including rev: afterwards a
	// Watch after a revision below rev fails with ErrCompacted, and one
	// after rev or later works.
	Compact(ctx context.Context, rev int64) error
}

// Options adjusts the suite to a backend. The zero value runs everything
// with default sizes.
type Options struct {
	// SkipSlowWatcher skips the test in which a watcher stops reading while
	// writers go on, for backends that cannot bound a watcher's lag.
	SkipSlowWatcher bool
	// SlowWatcherWrites is how many writes the slow-watcher test makes while
	// its watcher does not read (default 2000). Set it above the backend's
	// lag limit so that the ErrLagging path is exercised.
	SlowWatcherWrites int
	// Goroutines and Increments size the read-modify-write test: Goroutines
	// goroutines each add 1 Increments times (defaults 8 and 25).
	Goroutines, Increments int
	// CreateShared, when set, runs the clause on events that share a
	// revision (WatchSharedRevision): it must create every key of values
	// (none exists yet) in one transaction of the backend, as another
	// program writing the same store would, so that all of them take the
	// same revision, and return that revision. Backends that give every
	// write its own revision leave it nil, and the clause is skipped. For
	// an etcdstore.Store s over client, with JSON values:
	//
	//	CreateShared: func(ctx context.Context, st store.Store[*storetest.Value], values map[string]*storetest.Value) (int64, error) {
	//		prefix := st.(*etcdstore.Store[*storetest.Value]).Prefix()
	//		var conds []clientv3.Cmp
	//		var puts []clientv3.Op
	//		for k, v := range values {
	//			b, err := json.Marshal(v)
	//			if err != nil {
	//				return 0, err
	//			}
	//			conds = append(conds, clientv3.Compare(clientv3.CreateRevision(prefix+k), "=", 0))
	//			puts = append(puts, clientv3.OpPut(prefix+k, string(b)))
	//		}
	//		resp, err := client.Txn(ctx).If(conds...).Then(puts...).Commit()
	//		if err == nil && !resp.Succeeded {
	//			err = errors.New("a key exists")
	//		}
	//		if err != nil {
	//			return 0, err
	//		}
	//		return resp.Header.Revision, nil
	//	}
	CreateShared func(ctx context.Context, s store.Store[*Value], values map[string]*Value) (int64, error)
	// RecordsCauses says that the backend keeps a write's cause
	// (store.WithCause) with its revision and delivers it with the watch
	// event (store.Event.Cause); without it, the cause clause checks that
	// writes with a cause succeed and events carry none.
	RecordsCauses bool
}

func (o Options) withDefaults() Options {
	if o.SlowWatcherWrites <= 0 {
		o.SlowWatcherWrites = 2000
	}
	if o.Goroutines <= 0 {
		o.Goroutines = 8
	}
	if o.Increments <= 0 {
		o.Increments = 25
	}
	return o
}

// Run runs every conformance test against stores made by newStore; each
// sub-test gets a fresh, empty store. Stores created by newStore are cleaned
// up by the factory via t.Cleanup.
func Run(t *testing.T, newStore func(t *testing.T) store.Store[*Value]) {
	RunWith(t, newStore, Options{})
}

// RunWith is Run with options.
func RunWith(t *testing.T, newStore func(t *testing.T) store.Store[*Value], opts Options) {
	s := suite{newStore: newStore, opts: opts.withDefaults()}
	for _, tc := range []struct {
		name string
		run  func(*testing.T, store.Store[*Value])
	}{
		{"CreateAndGet", s.createAndGet},
		{"CreateExisting", s.createExisting},
		{"GetNotFound", s.getNotFound},
		{"UpdateSucceeds", s.updateSucceeds},
		{"UpdateConflict", s.updateConflict},
		{"UpdateNotFound", s.updateNotFound},
		{"Delete", s.deleteSemantics},
		{"RevisionsGrow", s.revisionsGrow},
		{"ListPrefixSorted", s.listPrefixSorted},
		{"ListConsistentWithRevision", s.listConsistent},
		{"WatchOrderedExactlyOnce", s.watchOrdered},
		{"WatchPrefix", s.watchPrefix},
		{"WatchResumeFromEveryRevision", s.watchResume},
		{"WatchFutureRevision", s.watchFuture},
		{"WatchFarFutureRevisionWaits", s.watchFarFuture},
		{"WatchSharedRevision", s.watchShared},
		{"AWritersCauseIsDeliveredWithItsRevisionsEvent", s.causeDelivered},
		{"ProgressAfterEveryEventUpToIt", s.progressOrdered},
		{"ProgressOnQuietPrefix", s.progressQuietPrefix},
		{"ProgressRequestsBackToBackAreEachAnswered", s.progressBackToBack},
		{"ProgressInvalidInput", s.progressInvalid},
		{"WatchCompacted", s.watchCompacted},
		{"WatchStop", s.watchStop},
		{"WatchContextCancel", s.watchCancel},
		{"ConcurrentWatchers", s.concurrentWatchers},
		{"SlowWatcher", s.slowWatcher},
		{"GuardRevision", s.guardRevision},
		{"GuardCreateRevision", s.guardCreateRevision},
		{"GuardAbsentKey", s.guardAbsent},
		{"GuardFailedWritesNothing", s.guardFailedWritesNothing},
		{"ModifyConcurrentIncrements", s.modifyIncrements},
		{"ModifyAndCreateOrUpdate", s.modifyHelpers},
		{"AWriteThatChangesNothingIsNotStored", s.unchangedWritesNothing},
		{"AWriteThatChangesNothingStillChecksRevisionAndGuards", s.unchangedChecksConditions},
		{"CheckHoldsExactlyWhenAnUpdateWouldBeAllowed", s.checkConditions},
		{"ABatchReportsEachRefusalOnItsWriteAndLandsTheOthers", s.batchRefusalsPerWrite},
		{"ABatchWithBadInputWritesNothing", s.batchBadInputWritesNothing},
		{"ABatchIsCommittedWithNoOtherWriteBetween", s.batchCommittedTogether},
		{"ABatchOfManyWritesReportsEachOnItsOwn", s.batchOfManyWrites},
		{"RandomBatchesAgreeWithAModelOfSingleWrites", s.batchAgainstAModel},
		{"DiffReportsEachChangedKeyOnceWithItsStateNow", s.diffReportsNetChange},
		{"AWatcherThatFallsBehindCatchesUpByDifference", s.watchCatchingUp},
		{"InvalidInput", s.invalidInput},
		{"ContextCancelled", s.contextCancelled},
		{"NilContext", s.nilContext},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, s.newStore(t)) })
	}
}

type suite struct {
	newStore func(t *testing.T) store.Store[*Value]
	opts     Options
}

// patience is Patience, under the name the suite's clauses use.
const patience = Patience

func val(n int) *Value { return &Value{N: n, S: fmt.Sprint("v", n)} }

func mustCreate(t *testing.T, s store.Store[*Value], key string, v *Value) store.Object[*Value] {
	t.Helper()
	obj, err := s.Create(t.Context(), key, v)
	if err != nil {
		t.Fatalf("Create(%q): %v", key, err)
	}
	return obj
}

func mustUpdate(t *testing.T, s store.Store[*Value], key string, v *Value, rev int64) store.Object[*Value] {
	t.Helper()
	obj, err := s.Update(t.Context(), key, v, rev)
	if err != nil {
		t.Fatalf("Update(%q, rev %d): %v", key, rev, err)
	}
	return obj
}

func mustRevision(t *testing.T, s store.Store[*Value]) int64 {
	t.Helper()
	rev, err := s.Revision(t.Context())
	if err != nil {
		t.Fatalf("Revision: %v", err)
	}
	return rev
}

func mustWatch(t *testing.T, s store.Store[*Value], prefix string, after int64) store.Watcher[*Value] {
	t.Helper()
	w, err := s.Watch(t.Context(), prefix, after)
	if err != nil {
		t.Fatalf("Watch(%q, %d): %v", prefix, after, err)
	}
	t.Cleanup(w.Stop)
	return w
}

func requireIs(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want one matching %v", what, err, target)
	}
}

// next returns the watch's next event (NextEvent).
func next(t *testing.T, w store.Watcher[*Value]) store.Event[*Value] {
	t.Helper()
	return NextEvent(t, w)
}

// ended waits for the watch to end (WatchEnded) and returns its Err.
func ended(t *testing.T, w store.Watcher[*Value]) error {
	t.Helper()
	return WatchEnded(t, w)
}
