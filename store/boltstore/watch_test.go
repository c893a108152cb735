package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/storetest"
)

// patience bounds waits so that a broken watch fails the test instead of
// hanging it; it asserts nothing about speed.
const patience = storetest.Patience

// nextEvent is storetest.NextEvent for this package's item.
func nextEvent(t *testing.T, w store.Watcher[*item]) store.Event[*item] {
	t.Helper()
	return storetest.NextEvent(t, w)
}

func assertEvent(t *testing.T, got, want store.Event[*item]) {
	t.Helper()
	if got.Type != want.Type || got.Object.Key != want.Object.Key ||
		got.Object.Revision != want.Object.Revision || got.Object.CreateRevision != want.Object.CreateRevision ||
		*got.Object.Value != *want.Object.Value {
		t.Fatalf("event %v %+v %+v, want %v %+v %+v", got.Type, got.Object, *got.Object.Value,
			want.Type, want.Object, *want.Object.Value)
	}
}

// TestWatchCatchingUpDuringLiveWritesDeliversEveryRevisionOnce starts
// watches from old revisions while concurrent writers go on, so that each
// watch switches from the persisted history to live events in the middle of
// the writes: each must deliver every revision after its start exactly once,
// in order.
func TestWatchCatchingUpDuringLiveWritesDeliversEveryRevisionOnce(t *testing.T) {
	s, _ := openTemp(t, boltstore.WithWatchBuffer(1<<16))
	ctx := t.Context()
	const writers, perWriter = 4, 150
	var wg sync.WaitGroup
	started := make(chan struct{})
	for g := range writers {
		wg.Go(func() {
			for i := range perWriter {
				if _, err := s.Create(ctx, fmt.Sprintf("w%d/%d", g, i), &item{N: i}); err != nil {
					t.Error(err)
					return
				}
				if g == 0 && i == perWriter/3 {
					close(started)
				}
			}
		})
	}
	<-started
	var watches []store.Watcher[*item]
	var afters []int64
	for _, after := range []int64{0, 5, 50} {
		w, err := s.Watch(ctx, "", after)
		mustNot(t, err)
		defer w.Stop()
		watches, afters = append(watches, w), append(afters, after)
	}
	wg.Wait()
	final := mustRevisionOf(t, s)
	if final != writers*perWriter {
		t.Fatalf("revision %d after %d writes", final, writers*perWriter)
	}
	for i, w := range watches {
		for want := afters[i] + 1; want <= final; want++ {
			if ev := nextEvent(t, w); ev.Object.Revision != want {
				t.Fatalf("watch after %d: revision %d, want %d", afters[i], ev.Object.Revision, want)
			}
		}
	}
	// Nothing more: the next event is the next write.
	marker, err := s.Create(ctx, "marker", &item{})
	mustNot(t, err)
	for _, w := range watches {
		if ev := nextEvent(t, w); ev.Object.Revision != marker.Revision {
			t.Fatalf("after the writes got revision %d, want the marker %d", ev.Object.Revision, marker.Revision)
		}
	}
}

func TestWatchDeletedCarriesLastValue(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	w, err := s.Watch(ctx, "a", 0)
	mustNot(t, err)
	defer w.Stop()
	obj, err := s.Create(ctx, "a", &item{N: 7, S: "last"})
	mustNot(t, err)
	rev, err := s.Delete(ctx, "a", obj.Revision)
	mustNot(t, err)
	assertEvent(t, nextEvent(t, w), store.Event[*item]{Type: store.Created, Object: obj})
	obj.Revision = rev
	assertEvent(t, nextEvent(t, w), store.Event[*item]{Type: store.Deleted, Object: obj})
}

// TestSlowWatcherIsEndedWithoutBlockingWriters writes far more than a
// watcher's buffer while it reads nothing: the writes all complete, and the
// watcher delivers a gap-free prefix, then ends with ErrLagging.
func TestSlowWatcherIsEndedWithoutBlockingWriters(t *testing.T) {
	const buffer = 8
	s, _ := openTemp(t, boltstore.WithWatchBuffer(buffer))
	ctx := t.Context()
	w, err := s.Watch(ctx, "", 0)
	mustNot(t, err)
	defer w.Stop()
	for i := range 4 * buffer {
		_, err := s.Create(ctx, fmt.Sprint(i), &item{N: i})
		mustNot(t, err)
	}
	var last int64
	for ev := range w.Events() {
		if ev.Object.Revision != last+1 {
			t.Fatalf("revision %d after %d", ev.Object.Revision, last)
		}
		last = ev.Object.Revision
	}
	if !errors.Is(w.Err(), store.ErrLagging) {
		t.Fatalf("slow watcher ended with %v, want ErrLagging", w.Err())
	}
	if last >= 4*buffer {
		t.Fatalf("slow watcher delivered all %d events; want it ended", last)
	}
	// It resumes from the last event it delivered.
	w2, err := s.Watch(ctx, "", last)
	mustNot(t, err)
	defer w2.Stop()
	if ev := nextEvent(t, w2); ev.Object.Revision != last+1 {
		t.Fatalf("resumed at revision %d, want %d", ev.Object.Revision, last+1)
	}
}

func TestWatchEndsWithContext(t *testing.T) {
	s, _ := openTemp(t)
	ctx, cancel := context.WithCancel(t.Context())
	w, err := s.Watch(ctx, "", 0)
	mustNot(t, err)
	defer w.Stop()
	_, err = s.Create(t.Context(), "a", &item{})
	mustNot(t, err)
	cancel()
	for range w.Events() {
		// The event may or may not be delivered; the channel must close.
	}
	if !errors.Is(w.Err(), context.Canceled) {
		t.Fatalf("Err = %v, want context.Canceled", w.Err())
	}
}

func TestStopEndsWatchWithoutError(t *testing.T) {
	s, _ := openTemp(t)
	w, err := s.Watch(t.Context(), "", 0)
	mustNot(t, err)
	w.Stop()
	w.Stop()
	if _, ok := <-w.Events(); ok {
		t.Fatal("event after Stop")
	}
	if w.Err() != nil {
		t.Fatalf("Err after Stop = %v, want nil", w.Err())
	}
}
