package shard

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOwnerlessListsWhatStatusListsThroughACrashTakeover: Ownerless (what
// a controller's Health reports) names exactly Status().Ownerless before,
// during and after the takeover of a crashed replica's buckets, and is
// empty for a zero or nil Replica.
func TestOwnerlessListsWhatStatusListsThroughACrashTakeover(t *testing.T) {
	var zero Replica
	require.Empty(t, zero.Ownerless())
	var nilRep *Replica
	require.Empty(t, nilRep.Ownerless())

	synctest.Test(t, func(t *testing.T) {
		opts := Options{Buckets: 16, TTL: 2 * time.Second}
		c := newCluster(t, opts, time.Millisecond)
		defer c.det.stop()
		a := c.start("a", 1)
		b := c.start("b", 2)
		time.Sleep(5 * time.Second)
		require.Empty(t, a.rep.Ownerless())

		victim, survivor := a, b
		if b.rep.Status().Assigner {
			victim, survivor = b, a
		}
		c.crash(victim)
		var most []int
		for range 2 * opts.TTL / (50 * time.Millisecond) {
			time.Sleep(50 * time.Millisecond)
			got, st := survivor.rep.Ownerless(), survivor.rep.Status()
			require.Equal(t, st.Ownerless, got)
			if len(got) > len(most) {
				most = got
			}
		}
		require.Len(t, most, 8, "the crashed replica's buckets never showed as ownerless")
		require.True(t, slices.IsSorted(most))
		require.Empty(t, survivor.rep.Ownerless())
		c.stop(survivor)
	})
}
