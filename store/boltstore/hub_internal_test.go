package boltstore

import (
	"testing"

	"github.com/converge-go/converge/store"
)

// drain returns the feed's queued items as (type, revision) pairs.
func drain(f *feed) [][2]int64 {
	var got [][2]int64
	for {
		ev, ok := f.pop()
		if !ok {
			return got
		}
		got = append(got, [2]int64{int64(ev.typ), ev.rev})
	}
}

// A progress request for a revision committed but not yet published (its
// commit handler has not run) is answered only once it is, behind its event
// and every event before it; requests waiting together get one answer.
func TestProgressWaitsForUnpublishedRevisions(t *testing.T) {
	h := newHub(0, DefaultHistory)
	f := newFeed("", 0, 100)
	if _, err := h.subscribe(f); err != nil {
		t.Fatal(err)
	}
	created, progress := int64(store.Created), int64(store.Progress)

	if err := h.requestProgress(f, 2); err != nil {
		t.Fatal(err)
	}
	if err := h.requestProgress(f, 3); err != nil {
		t.Fatal(err)
	}
	if got := drain(f); len(got) != 0 {
		t.Fatalf("answered before revision 3 was published: %v", got)
	}
	// Commit handlers run out of order: 2 is held back until 1 arrives.
	h.committed(rawEvent{typ: store.Created, key: "b", rev: 2})
	h.committed(rawEvent{typ: store.Created, key: "a", rev: 1})
	if got := drain(f); len(got) != 2 || got[0] != [2]int64{created, 1} || got[1] != [2]int64{created, 2} {
		t.Fatalf("events 1 and 2, no answer yet: got %v", got)
	}
	h.committed(rawEvent{typ: store.Created, key: "c", rev: 3})
	want := [][2]int64{{created, 3}, {progress, 3}}
	if got := drain(f); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %v, want %v (one answer for both requests)", got, want)
	}

	// A request for a published revision is answered at once, at the last
	// published revision; back-to-back requests share one marker.
	for range 3 {
		if err := h.requestProgress(f, 1); err != nil {
			t.Fatal(err)
		}
	}
	if got := drain(f); len(got) != 1 || got[0] != [2]int64{progress, 3} {
		t.Fatalf("got %v, want one answer at revision 3", got)
	}

	h.unsubscribe(f)
	if err := h.requestProgress(f, 1); err == nil {
		t.Fatal("a request on an ended watch succeeded")
	}
}
