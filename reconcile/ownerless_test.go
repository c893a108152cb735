package reconcile_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/shard"
	"github.com/converge-go/converge/reconcile/shard/shardtest"
	"github.com/converge-go/converge/store"
)

// TestHealthNamesTheBucketsACrashedReplicaLeftOwnerlessUntilTheirTakeover:
// a sharded controller's Health lists no ownerless bucket while its
// replicas run; when the other replica crashes (its store unreachable,
// nothing released), Health names that replica's buckets, and only
// them, until the surviving assigner takes them over (within the crash
// handover bound, TTL + 1 s), then none again.
// A controller without a Sharder reports none.
func TestHealthNamesTheBucketsACrashedReplicaLeftOwnerlessUntilTheirTakeover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		raw := store.NewMemory[[]byte]()
		opts := shard.Options{Buckets: 16, TTL: 2 * time.Second}
		rs := shardtest.StartEach(t, raw, opts, "a", "b") // a is the assigner
		survivor, victim := rs[0], rs[1]

		rec := reconcile.ReconcilerFunc[string](func(context.Context, reconcile.Request[string]) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		})
		c, err := reconcile.New(store.NewView[string](raw, nil), rec, reconcile.Options[string]{Name: "items", Prefix: "items/", Shard: survivor.Replica})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		time.Sleep(5 * time.Second)

		st := survivor.Status()
		require.True(t, st.Assigner, "a should be the assigner")
		require.Equal(t, 8, st.Owned)
		h := c.Health()
		require.True(t, h.Synced)
		require.Empty(t, h.Degraded)
		require.Empty(t, h.Ownerless, "ownerless buckets while every replica runs")
		var victims []int
		for _, b := range st.Buckets {
			if b.Owner == "b" {
				victims = append(victims, b.Bucket)
			}
		}
		require.Len(t, victims, 8)

		crashed := time.Now()
		victim.Crash()
		var most []int
		var last time.Duration // since the crash, when Health last named one
		for range 2 * opts.TTL / (50 * time.Millisecond) {
			time.Sleep(50 * time.Millisecond)
			got := c.Health().Ownerless
			if len(got) > 0 {
				last = time.Since(crashed)
			}
			for _, b := range got {
				require.Contains(t, victims, b, "Health names bucket %d, which the crashed replica did not own", b)
			}
			if len(got) > len(most) {
				most = got
			}
		}
		require.Equal(t, victims, most, "Health never named every bucket of the crashed replica")
		require.True(t, slices.IsSorted(most))
		require.Empty(t, c.Health().Ownerless, "ownerless buckets after the takeover")
		require.LessOrEqual(t, last, opts.TTL+time.Second, "buckets ownerless past the crash handover bound (TTL + 1 s)")
		require.Equal(t, 16, survivor.Status().Owned)

		cancel()
		require.NoError(t, <-done)
		survivor.Stop()

		plain, err := reconcile.New(store.NewMemory[string](), rec, reconcile.Options[string]{Name: "plain"})
		require.NoError(t, err)
		require.Nil(t, plain.Health().Ownerless)
		require.Nil(t, plain.Sharder())
		require.Equal(t, reconcile.Sharder(survivor.Replica), c.Sharder())
	})
}
