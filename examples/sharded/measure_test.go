package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/converge-go/converge/reconcile/shard"
)

// A planned handover is measured from the old owner's release record to
// the target's gain and to its first reconcile of a key of the bucket,
// whichever of the two the polled records show first; reconciles by
// other replicas and buckets without keys are not samples, and a bucket
// whose target has not reconciled yet is pending.
func TestPlannedHandoversMeasureReleaseToGainAndFirstReconcile(t *testing.T) {
	const buckets = 4
	b := shard.Bucket("k", buckets)
	other := (b + 1) % buckets
	withKeys := map[int]bool{b: true}
	at := func(ms int) time.Time { return time.Unix(0, int64(ms)*int64(time.Millisecond)) }
	recs := []record{
		{At: at(0), Who: "a", Kind: kindRelease, N1: int64(b), Note: "b"},
		{At: at(1), Who: "a", Kind: kindRelease, N1: int64(other), Note: "b"}, // no keys
		{At: at(5), Who: "c", Kind: kindBegin, Key: "k"},                      // not the target
		{At: at(300), Who: "b", Kind: kindBegin, Key: "k"},                    // before its gain shows
		{At: at(302), Who: "b", Kind: kindGained, N1: int64(b)},
		{At: at(400), Who: "b", Kind: kindBegin, Key: "k"},
	}
	first, taken, pending := plannedHandovers(recs[:3], buckets, withKeys)
	assert.Empty(t, first)
	assert.Empty(t, taken)
	assert.Equal(t, 1, pending)

	first, taken, pending = plannedHandovers(recs, buckets, withKeys)
	assert.Equal(t, []time.Duration{300 * time.Millisecond}, first)
	assert.Equal(t, []time.Duration{302 * time.Millisecond}, taken)
	assert.Zero(t, pending)
}
