package storetest

import (
	"testing"
	"time"

	"github.com/converge-go/converge/store"
)

// The helpers below serve any test that reads a watch, in this suite and
// in the tests of other packages and modules, so that each does not write
// its own.

// Patience bounds every wait of NextEvent and WatchEnded, so that a broken
// watch fails the test instead of hanging it. It is a safety net, not an
// assertion about speed: inside a testing/synctest bubble it is fake time,
// which passes only once every goroutine of the bubble is blocked.
const Patience = 10 * time.Second

// NextEvent returns the watch's next event, failing t if the watch ends or
// nothing arrives within Patience.
func NextEvent[T any](t testing.TB, w store.Watcher[T]) store.Event[T] {
	t.Helper()
	timer := time.NewTimer(Patience)
	defer timer.Stop()
	select {
	case ev, ok := <-w.Events():
		if !ok {
			t.Fatalf("watch ended early: %v", w.Err())
		}
		return ev
	case <-timer.C:
		t.Fatalf("no watch event within %v", Patience)
	}
	return store.Event[T]{}
}

// WatchEnded waits for the watch's Events to close and returns its Err,
// failing t if an event arrives first or nothing happens within Patience.
func WatchEnded[T any](t testing.TB, w store.Watcher[T]) error {
	t.Helper()
	timer := time.NewTimer(Patience)
	defer timer.Stop()
	select {
	case ev, ok := <-w.Events():
		if ok {
			t.Fatalf("unexpected event at revision %d for %q", ev.Object.Revision, ev.Object.Key)
		}
		return w.Err()
	case <-timer.C:
		t.Fatalf("watch did not end within %v", Patience)
	}
	return nil
}
