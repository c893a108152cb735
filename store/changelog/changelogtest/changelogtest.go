// Package changelogtest measures the recovery point of a store shipped by
// store/changelog: writers load a store, each write it acknowledges is
// recorded with the time it returned, and once the store's disk is lost
// and the store restored, the writes acknowledged before the loss that
// the restored store lacks are the lost ones. It is imported by tests
// only.
package changelogtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
)

// Acked is a write a store acknowledged: its key, its value, and when the
// call returned.
type Acked[T any] struct {
	Key      string
	Value    T
	Revision int64
	At       time.Time
}

// Load creates new keys in s from writers goroutines, each key once, with
// value(key) as value, until ctx ends, and returns the writes s
// acknowledged. A write that fails (the store gone) is not acknowledged,
// and the writer goes on trying new keys until ctx ends.
func Load[T any](ctx context.Context, s store.Store[T], writers int, value func(key string) T) []Acked[T] {
	var mu sync.Mutex
	var acked []Acked[T]
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				key := fmt.Sprintf("load/%02d/%07d", w, i)
				v := value(key)
				obj, err := s.Create(ctx, key, v)
				if err != nil {
					continue
				}
				at := time.Now()
				mu.Lock()
				acked = append(acked, Acked[T]{Key: key, Value: v, Revision: obj.Revision, At: at})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return acked
}

// Lost returns the writes of acked made before killed that objs (the
// restored store's objects) lacks, or holds with a value same says
// differs, and the age at killed of the oldest of them (0 if none).
func Lost[T any](acked []Acked[T], killed time.Time, objs []store.Object[T], same func(want, got T) bool) ([]Acked[T], time.Duration) {
	got := make(map[string]T, len(objs))
	for _, o := range objs {
		got[o.Key] = o.Value
	}
	var lost []Acked[T]
	var oldest time.Duration
	for _, a := range acked {
		if !a.At.Before(killed) {
			continue
		}
		if v, ok := got[a.Key]; ok && same(a.Value, v) {
			continue
		}
		lost = append(lost, a)
		oldest = max(oldest, killed.Sub(a.At))
	}
	return lost, oldest
}

// RequireRecoveryPoint fails t unless every write of acked made more than
// rpo before killed is in objs with its value; it logs how many writes
// were acknowledged, how many lost, and the recovery point measured (the
// age of the oldest lost one at the loss).
func RequireRecoveryPoint[T any](t testing.TB, acked []Acked[T], killed time.Time, rpo time.Duration, objs []store.Object[T], same func(want, got T) bool) time.Duration {
	t.Helper()
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged")
	}
	lost, oldest := Lost(acked, killed, objs, same)
	t.Logf("recovery point: %d writes acknowledged before the loss, %d lost, the oldest lost acknowledged %v before it", countBefore(acked, killed), len(lost), oldest)
	if oldest > rpo {
		for _, l := range lost {
			if killed.Sub(l.At) > rpo {
				t.Errorf("%s, acknowledged %v before the loss, is not restored", l.Key, killed.Sub(l.At))
			}
		}
	}
	return oldest
}

func countBefore[T any](acked []Acked[T], killed time.Time) int {
	n := 0
	for _, a := range acked {
		if a.At.Before(killed) {
			n++
		}
	}
	return n
}

// Unsynced returns how many writes of acked made before killed lie above
// revision synced (a Shipper's Synced at the loss: what a power failure
// of the log's disk would have lost too), and the age at killed of the
// oldest of them.
func Unsynced[T any](acked []Acked[T], killed time.Time, synced int64) (int, time.Duration) {
	n := 0
	var oldest time.Duration
	for _, a := range acked {
		if a.At.Before(killed) && a.Revision > synced {
			n++
			oldest = max(oldest, killed.Sub(a.At))
		}
	}
	return n, oldest
}
