package shardtest_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/reconcile/shard"
	"github.com/converge-go/converge/reconcile/shard/shardtest"
	"github.com/converge-go/converge/store"
)

// TestACrashedReplicasBucketsAreOwnerlessUntilTakenOverAndAStoppedOnesNever:
// a replica that Crash cuts off leaves its buckets ownerless on the
// survivor until the takeover; one that Stop ends hands them over without
// a gap the survivor sees.
func TestACrashedReplicasBucketsAreOwnerlessUntilTakenOverAndAStoppedOnesNever(t *testing.T) {
	for _, crash := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			raw := store.NewMemory[[]byte]()
			rs := shardtest.StartEach(t, raw, shard.Options{Buckets: 8, TTL: 2 * time.Second}, "a", "b")
			a, b := rs[0], rs[1]
			defer a.Stop()
			time.Sleep(5 * time.Second)
			if !a.Status().Assigner {
				t.Fatal("the first replica StartEach started is not the assigner")
			}
			if a.Status().Owned != 4 || b.Status().Owned != 4 {
				t.Fatalf("owned %d and %d, want 4 each", a.Status().Owned, b.Status().Owned)
			}
			if crash {
				b.Crash()
			} else {
				b.Stop()
			}
			most := 0
			for range 80 {
				time.Sleep(50 * time.Millisecond)
				most = max(most, len(a.Ownerless()))
			}
			if want := map[bool]int{true: 4, false: 0}[crash]; most != want {
				t.Errorf("crash %v: at most %d ownerless buckets seen, want %d", crash, most, want)
			}
			if st := a.Status(); st.Owned != 8 || len(st.Ownerless) != 0 {
				t.Errorf("crash %v: the survivor owns %d, %v ownerless, want all 8, none", crash, st.Owned, st.Ownerless)
			}
			b.Stop() // a second stop does nothing
		})
	}
}
