package shardtest_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/reconcile/shard"
	"github.com/converge-go/converge/reconcile/shard/shardtest"
	"github.com/converge-go/converge/store"
)

// Two replicas share a store; one crashes, and the survivor lists its
// buckets as ownerless until it takes them over. The function below is
// the body of a test (an Example cannot be handed a *testing.T, so it
// only compiles; TestACrashedReplicasBucketsAreOwnerlessUntilTakenOver
// runs it).
func ExampleReplica_Crash() {
	_ = func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			raw := store.NewMemory[[]byte]()
			rs := shardtest.StartEach(t, raw, shard.Options{Buckets: 8, TTL: 2 * time.Second}, "a", "b")
			a, b := rs[0], rs[1] // a is the assigner
			defer a.Stop()
			time.Sleep(5 * time.Second)
			b.Crash()
			_ = a.Ownerless() // b's buckets, until a takes them over
		})
	}
}
