package boltstore_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
)

func TestReopenKeepsWritesAndRevision(t *testing.T) {
	s, path := openTemp(t)
	ctx := t.Context()
	a, err := s.Create(ctx, "a", &item{N: 1, S: "one"})
	mustNot(t, err)
	b, err := s.Create(ctx, "b", &item{N: 2})
	mustNot(t, err)
	a, err = s.Update(ctx, "a", &item{N: 3, S: "three"}, a.Revision)
	mustNot(t, err)
	_, err = s.Delete(ctx, "b", b.Revision)
	mustNot(t, err)
	mustNot(t, s.Close())

	s = openAt(t, path)
	assertRevision(t, s, 4)
	got, err := s.Get(ctx, "a")
	mustNot(t, err)
	if *got.Value != (item{N: 3, S: "three"}) || got.Revision != a.Revision || got.CreateRevision != a.CreateRevision {
		t.Fatalf("after reopen Get(a) = %+v %+v, want %+v", got, *got.Value, a)
	}
	if _, err := s.Get(ctx, "b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted key after reopen: %v", err)
	}
	objs, rev, err := s.List(ctx, "")
	mustNot(t, err)
	if len(objs) != 1 || rev != 4 {
		t.Fatalf("List after reopen: %d objects at revision %d, want 1 at 4", len(objs), rev)
	}
	c, err := s.Create(ctx, "c", &item{})
	mustNot(t, err)
	if c.Revision != 5 {
		t.Fatalf("first write after reopen took revision %d, want 5", c.Revision)
	}
}

func TestWatchResumesAcrossRestart(t *testing.T) {
	s, path := openTemp(t)
	ctx := t.Context()
	var want []store.Event[*item]
	objs := map[string]store.Object[*item]{}
	for i := range 20 {
		key := fmt.Sprintf("k%d", i%4)
		var ev store.Event[*item]
		cur, ok := objs[key]
		switch {
		case !ok:
			obj, err := s.Create(ctx, key, &item{N: i})
			mustNot(t, err)
			objs[key], ev = obj, store.Event[*item]{Type: store.Created, Object: obj}
		case i%3 == 0:
			rev, err := s.Delete(ctx, key, cur.Revision)
			mustNot(t, err)
			delete(objs, key)
			cur.Revision = rev
			ev = store.Event[*item]{Type: store.Deleted, Object: cur}
		default:
			obj, err := s.Update(ctx, key, &item{N: i}, cur.Revision)
			mustNot(t, err)
			objs[key], ev = obj, store.Event[*item]{Type: store.Updated, Object: obj}
		}
		want = append(want, ev)
	}
	mustNot(t, s.Close())

	s = openAt(t, path)
	for _, after := range []int64{0, 7, 19, 20} {
		w, err := s.Watch(ctx, "", after)
		mustNot(t, err)
		for _, ev := range want[after:] {
			assertEvent(t, nextEvent(t, w), ev)
		}
		// The same watch goes on with live events after the history.
		live, err := s.Create(ctx, fmt.Sprintf("live%d", after), &item{N: -1})
		mustNot(t, err)
		ev := store.Event[*item]{Type: store.Created, Object: live}
		assertEvent(t, nextEvent(t, w), ev)
		want = append(want, ev)
		w.Stop()
	}
}

// WithHistory bounds the revisions kept to watch from, across reopens: a
// smaller bound trims the file at Open, a larger one keeps what is there.
func TestHistoryIsBoundedAcrossReopens(t *testing.T) {
	s, path := openTemp(t, boltstore.WithHistory(5))
	ctx := t.Context()
	obj, err := s.Create(ctx, "a", &item{})
	mustNot(t, err)
	for i := range 11 {
		obj, err = s.Update(ctx, "a", &item{N: i}, obj.Revision)
		mustNot(t, err)
	}
	// Revision 12; history keeps 8..12, so watches after 7 or later work.
	assertCompactedAt(t, s, 7)
	mustNot(t, s.Close())

	s = openAt(t, path, boltstore.WithHistory(5))
	assertCompactedAt(t, s, 7)
	mustNot(t, s.Close())

	// A smaller history trims the file at Open.
	s = openAt(t, path, boltstore.WithHistory(2))
	assertCompactedAt(t, s, 10)
	mustNot(t, s.Close())

	// A larger one keeps what is there and grows from it.
	s = openAt(t, path, boltstore.WithHistory(100))
	assertCompactedAt(t, s, 10)
	_, err = s.Update(ctx, "a", &item{N: 100}, obj.Revision)
	mustNot(t, err)
	assertCompactedAt(t, s, 10)
}

// Compact discards history up to a revision (compacting below the oldest
// does nothing), leaves the objects as they are, and stays compacted
// across a reopen.
func TestCompactDiscardsHistoryButNotObjectsAndPersists(t *testing.T) {
	s, path := openTemp(t)
	ctx := t.Context()
	obj, err := s.Create(ctx, "a", &item{})
	mustNot(t, err)
	for i := range 9 {
		obj, err = s.Update(ctx, "a", &item{N: i}, obj.Revision)
		mustNot(t, err)
	}
	mustNot(t, s.Compact(ctx, 6))
	assertCompactedAt(t, s, 6)
	mustNot(t, s.Compact(ctx, 3)) // already discarded: nothing to do
	assertCompactedAt(t, s, 6)
	got, err := s.Get(ctx, "a")
	mustNot(t, err)
	if got.Revision != 10 {
		t.Fatalf("Compact changed the object: %+v", got)
	}
	mustNot(t, s.Close())
	s = openAt(t, path)
	assertCompactedAt(t, s, 6)
}

// assertCompactedAt checks that a watch after rev replays the history and one
// after rev-1 fails with ErrCompacted.
func assertCompactedAt(t *testing.T, s *boltstore.Store[*item], rev int64) {
	t.Helper()
	ctx := t.Context()
	if _, err := s.Watch(ctx, "", rev-1); !errors.Is(err, store.ErrCompacted) {
		t.Fatalf("Watch after %d: %v, want ErrCompacted", rev-1, err)
	}
	cur := mustRevisionOf(t, s)
	w, err := s.Watch(ctx, "", rev)
	mustNot(t, err)
	defer w.Stop()
	for want := rev + 1; want <= cur; want++ {
		if ev := nextEvent(t, w); ev.Object.Revision != want {
			t.Fatalf("watch after %d delivered revision %d, want %d", rev, ev.Object.Revision, want)
		}
	}
}
