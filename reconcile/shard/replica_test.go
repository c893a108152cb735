package shard

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
)

// TestInvalidOptionsAndCallsAreErrInvalid: bad options, a nil store, a
// nil context and a zero Replica are refused with an error matching
// ErrInvalid (and store.ErrInvalid), a second concurrent Run with
// ErrAlreadyRunning, never a panic.
func TestInvalidOptionsAndCallsAreErrInvalid(t *testing.T) {
	raw := store.NewMemory[[]byte]()
	for name, o := range map[string]Options{
		"no ID":            {},
		"slash in ID":      {ID: "a/b"},
		"negative buckets": {ID: "a", Buckets: -1},
		"too many buckets": {ID: "a", Buckets: MaxBuckets + 1},
		"negative TTL":     {ID: "a", TTL: -time.Second},
		"negative drain":   {ID: "a", Drain: -time.Second},
		"TTL too short":    {ID: "a", TTL: 1},
		"invalid prefix":   {ID: "a", Prefix: "\x00"},
	} {
		_, err := New(raw, o)
		require.ErrorIs(t, err, ErrInvalid, name)
		require.ErrorIs(t, err, store.ErrInvalid, name)
	}
	_, err := New(nil, Options{ID: "a"})
	require.ErrorIs(t, err, ErrInvalid)
	var nilMem *store.Memory[[]byte]
	_, err = New(nilMem, Options{ID: "a"})
	require.ErrorIs(t, err, ErrInvalid)

	var zero Replica
	require.ErrorIs(t, zero.Run(context.Background()), ErrInvalid)
	_, ok := zero.Claim("k")
	require.False(t, ok)
	zero.Subscribe(func(func(string) bool, int64) {})()
	require.Equal(t, Status{}, zero.Status())
	var nilRep *Replica
	_, ok = nilRep.Claim("k")
	require.False(t, ok)

	synctest.Test(t, func(t *testing.T) {
		r, err := New(raw, Options{ID: "a"})
		require.NoError(t, err)
		//lint:ignore SA1012 a nil context is the input under test
		require.ErrorIs(t, r.Run(nil), ErrInvalid) //nolint:staticcheck
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- r.Run(ctx) }()
		synctest.Wait()
		require.ErrorIs(t, r.Run(ctx), ErrAlreadyRunning, "a second Run at once was accepted")
		cancel()
		require.NoError(t, <-done)
	})
}

// TestBucketOfAKeyNeverChanges pins Bucket's values: a change of the hash
// would move keys between buckets across a rolling upgrade.
func TestBucketOfAKeyNeverChanges(t *testing.T) {
	for key, want := range map[string][2]int{
		"": {155, 5}, "items/a": {686, 4}, "items/b": {961, 2}, "orders/42": {682, 6}, "日本": {774, 3},
	} {
		require.Equal(t, want, [2]int{Bucket(key, 1024), Bucket(key, 7)}, "bucket of %q", key)
	}
	require.Equal(t, 0, Bucket("x", 0), "a non-positive count")
	require.Equal(t, 0, Bucket("x", -3), "a non-positive count")
}

// recMetrics records what a Replica reports.
type recMetrics struct {
	mu        sync.Mutex
	owned     map[string]int
	handovers map[string]int
}

func (m *recMetrics) BucketsOwned(id string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.owned[id] = n
}

func (m *recMetrics) Handover(id, kind string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.handovers[kind]++
}

// TestCrashedOwnersBucketsShowAsOwnerlessUntilTakenOverAndMetricsFollow:
// a crashed replica's buckets are listed in Status.Ownerless until the
// assigner names new owners; buckets_owned and the handover counts by
// kind follow every change.
func TestCrashedOwnersBucketsShowAsOwnerlessUntilTakenOverAndMetricsFollow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &recMetrics{owned: map[string]int{}, handovers: map[string]int{}}
		opts := Options{Buckets: 16, TTL: 2 * time.Second, Metrics: m}
		c := newCluster(t, opts, time.Millisecond)
		defer c.det.stop()
		a := c.start("a", 1)
		time.Sleep(5 * time.Second)
		b := c.start("b", 2)
		time.Sleep(5 * time.Second)
		m.mu.Lock()
		require.Equal(t, map[string]int{"a": 8, "b": 8}, m.owned, "buckets_owned after a join")
		require.Equal(t, 8, m.handovers["planned"], "planned handovers on a join")
		m.mu.Unlock()

		victim, survivor := a, b
		if b.rep.Status().Assigner {
			victim, survivor = b, a
		}
		c.crash(victim)
		seen := 0
		for range 2 * opts.TTL / (50 * time.Millisecond) {
			time.Sleep(50 * time.Millisecond)
			seen = max(seen, len(survivor.rep.Status().Ownerless))
		}
		require.Equal(t, 8, seen, "the crashed owner's buckets never showed as ownerless before their takeover")
		st := survivor.rep.Status()
		require.Empty(t, st.Ownerless)
		require.Equal(t, 16, st.Owned)
		m.mu.Lock()
		require.Equal(t, 16, m.owned[survivor.id])
		require.Equal(t, map[string]int{"initial": 16, "planned": 8, "takeover": 8}, m.handovers, "handovers by kind")
		m.mu.Unlock()
		c.stop(survivor)
	})
}
