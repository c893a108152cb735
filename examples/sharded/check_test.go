package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/shard"
)

// recs builds records one millisecond apart from "who kind key n1 n2 note"
// lines.
func recs(t *testing.T, lines ...string) []record {
	t.Helper()
	var out []record
	for i, l := range lines {
		r, err := parseRecord(fmt.Sprintf("%d %s", int64(i)*int64(time.Millisecond), l))
		require.NoError(t, err)
		out = append(out, r)
	}
	return out
}

const checkBuckets = 4

// history gives key k's bucket to a from revision 10 and to b from 20.
func history(key string) ownerHistory {
	return ownerHistory{shard.Bucket(key, checkBuckets): {{Revision: 10, Owner: "a"}, {Revision: 20, Owner: "b"}}}
}

// The checker flags a key whose reconcile begins in one replica while
// another replica's is in progress, and nothing when they follow each
// other, or when the first replica was killed in between.
func TestCheckerFlagsTwoReplicasReconcilingAKeyAtOnce(t *testing.T) {
	v := check(recs(t, "a B k 10 0 -", "b B k 20 0 -", "a E k 10 0 ok", "b E k 20 0 ok"), nil, checkBuckets)
	assert.Len(t, v.Overlaps, 1)
	assert.False(t, v.ok())

	v = check(recs(t, "a B k 10 0 -", "a E k 10 0 ok", "b B k 20 0 -", "b E k 20 0 ok"), nil, checkBuckets)
	assert.True(t, v.ok(), "%v", v)
	assert.Equal(t, 2, v.Reconciles)

	v = check(recs(t, "a B k 10 0 -", "parent KILL a 0 0 -", "b B k 20 0 -", "b E k 20 0 ok"), nil, checkBuckets)
	assert.True(t, v.ok(), "%v", v)
}

// A reconcile of a replica frozen mid-reconcile is counted apart, not as
// an overlap: the frozen replica cannot stop; its writes are checked.
func TestCheckerCountsOverlapsWithAFrozenReplicaApart(t *testing.T) {
	v := check(recs(t, "a B k 10 0 -", "parent STOP a 0 0 -", "b B k 20 0 -", "b E k 20 0 ok",
		"parent CONT a 0 0 -", "a E k 10 0 guard"), nil, checkBuckets)
	assert.True(t, v.ok(), "%v", v)
	assert.Equal(t, 1, v.FrozenOverlaps)
	assert.Equal(t, 1, v.Refused)
}

// Each accepted write must come from the bucket's owner at the write's
// revision, under the epoch of that owner record.
func TestCheckerFlagsWritesFromANonOwnerOrAStaleEpoch(t *testing.T) {
	h := history("k")
	v := check(recs(t, "a W k 10 15 -", "b W k 20 25 -"), h, checkBuckets)
	assert.True(t, v.ok(), "%v", v)
	assert.Equal(t, 2, v.Writes)

	for name, line := range map[string]string{
		"old owner after the move":  "a W k 10 25 -",
		"new owner before the move": "b W k 20 15 -",
		"owner under a stale epoch": "b W k 10 25 -",
		"before any owner":          "a W k 10 5 -",
	} {
		v := check(recs(t, line), h, checkBuckets)
		assert.Len(t, v.Unfenced, 1, name)
	}
}

// A reconcile that began and never ended, in a replica that was neither
// killed nor left, is reported: a lost end would hide an overlap.
func TestCheckerReportsReconcilesThatNeverEnded(t *testing.T) {
	v := check(recs(t, "a B k 10 0 -"), nil, checkBuckets)
	assert.Equal(t, []string{"k by a"}, v.Unended)
	assert.False(t, v.ok())
}

// Records read back as written.
func TestRecordsRoundTrip(t *testing.T) {
	r := record{At: time.Unix(0, 12345), Who: "replica-1", Kind: kindEnd, Key: "items/00001", N1: 7, N2: 9, Note: outGuard}
	got, err := parseRecord(r.String())
	require.NoError(t, err)
	assert.True(t, r.At.Equal(got.At))
	got.At = r.At
	assert.Equal(t, r, got)
	empty := record{At: time.Unix(0, 1), Who: "parent", Kind: kindKill}
	got, err = parseRecord(empty.String())
	require.NoError(t, err)
	assert.Equal(t, "", got.Key)
	_, err = parseRecord("1 a B")
	assert.Error(t, err)
}
