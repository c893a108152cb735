package boltstore_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
)

// write is one acknowledged write seen by a test writer.
type write struct {
	key string
	n   int
	rev int64
	typ store.EventType
}

// TestSharedCommitsGiveEachWriterItsOwnOutcomeAndEveryRevisionOnce runs
// writers that contend on the same counters, so that many of their
// compare-and-swaps fail inside shared commits. Each failure must reach
// only its own writer, as ErrConflict, and the successful writes must take
// every revision exactly once, match the watch's events one for one, and
// add up to the final counters.
func TestSharedCommitsGiveEachWriterItsOwnOutcomeAndEveryRevisionOnce(t *testing.T) {
	s, _ := openTemp(t, boltstore.WithWatchBuffer(1<<16))
	ctx := t.Context()
	const writers, increments, counters = 8, 40, 3
	for c := range counters {
		_, err := s.Create(ctx, fmt.Sprint("counter", c), &item{})
		mustNot(t, err)
	}
	start := mustRevisionOf(t, s)
	w, err := s.Watch(ctx, "", start)
	mustNot(t, err)
	defer w.Stop()

	var (
		mu        sync.Mutex
		acked     []write
		conflicts int
		wg        sync.WaitGroup
	)
	for g := range writers {
		wg.Go(func() {
			key := fmt.Sprint("counter", g%counters)
			for range increments {
				for {
					cur, err := s.Get(ctx, key)
					if err != nil {
						t.Error(err)
						return
					}
					obj, err := s.Update(ctx, key, &item{N: cur.Value.N + 1}, cur.Revision)
					if errors.Is(err, store.ErrConflict) {
						mu.Lock()
						conflicts++
						mu.Unlock()
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					acked = append(acked, write{key: key, n: obj.Value.N, rev: obj.Revision, typ: store.Updated})
					mu.Unlock()
					break
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d writes acknowledged, %d conflicts", len(acked), conflicts)
	if len(acked) != writers*increments {
		t.Fatalf("%d writes acknowledged, want %d", len(acked), writers*increments)
	}
	slices.SortFunc(acked, func(a, b write) int { return int(a.rev - b.rev) })
	for i, a := range acked {
		if want := start + int64(i) + 1; a.rev != want {
			t.Fatalf("acknowledged revisions are not gap-free: %d where %d was due", a.rev, want)
		}
		ev := nextEvent(t, w)
		if ev.Object.Revision != a.rev || ev.Object.Key != a.key || ev.Object.Value.N != a.n {
			t.Fatalf("event %s=%d at %d, acknowledged %s=%d at %d",
				ev.Object.Key, ev.Object.Value.N, ev.Object.Revision, a.key, a.n, a.rev)
		}
	}
	total := 0
	for c := range counters {
		obj, err := s.Get(ctx, fmt.Sprint("counter", c))
		mustNot(t, err)
		total += obj.Value.N
	}
	if total != writers*increments {
		t.Fatalf("counters add up to %d, want %d: an increment was lost or applied twice", total, writers*increments)
	}
	assertRevision(t, s, start+writers*increments)
}

// TestFailingWriteDoesNotFailItsBatch makes some concurrent writes fail inside
// the transaction (a guard on a damaged record), which makes bbolt roll back
// the shared transaction and run the other writes again. Those must all
// succeed, once each, with gap-free revisions.
func TestFailingWriteDoesNotFailItsBatch(t *testing.T) {
	s, _ := openTemp(t, boltstore.WithWatchBuffer(1<<16))
	mustNot(t, boltstore.DamageRecord(s, "damaged"))
	ctx := t.Context()
	w, err := s.Watch(ctx, "", 0)
	mustNot(t, err)
	defer w.Stop()
	const writers, perWriter = 8, 30
	var (
		mu    sync.Mutex
		revs  []int64
		wg    sync.WaitGroup
		fails int
	)
	for g := range writers {
		wg.Go(func() {
			for i := range perWriter {
				key := fmt.Sprintf("w%d/%d", g, i)
				if i%3 == 0 {
					_, err := s.Create(ctx, key, &item{N: i}, store.Guard{Key: "damaged"})
					if !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, boltstore.ErrCorrupt) {
						t.Errorf("write guarded by a damaged record: %v, want ErrUnavailable and ErrCorrupt", err)
					}
					mu.Lock()
					fails++
					mu.Unlock()
					continue
				}
				obj, err := s.Create(ctx, key, &item{N: i})
				if err != nil {
					t.Errorf("write in a batch with a failing write: %v", err)
					return
				}
				mu.Lock()
				revs = append(revs, obj.Revision)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(revs)
	for i, rev := range revs {
		if rev != int64(i)+1 {
			t.Fatalf("revision %d where %d was due", rev, i+1)
		}
		if ev := nextEvent(t, w); ev.Object.Revision != rev {
			t.Fatalf("event at revision %d, want %d", ev.Object.Revision, rev)
		}
	}
	assertRevision(t, s, int64(len(revs)))
	objs, _, err := s.List(ctx, "w")
	mustNot(t, err)
	if len(objs) != len(revs) {
		t.Fatalf("%d objects stored, %d writes acknowledged", len(objs), len(revs))
	}
	t.Logf("%d writes, %d failed inside their transaction", len(revs), fails)
}
