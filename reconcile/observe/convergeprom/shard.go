package convergeprom

import (
	"time"

	"github.com/converge-go/converge/reconcile/shard"
)

// handoverBuckets span a planned handover on a fast store (a millisecond)
// to a crash takeover on etcd's coarse TTLs (a minute).
var handoverBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60}

// BucketsOwned implements shard.Metrics: n is set as
// converge_shard_buckets_owned{replica}. Give the Metrics to
// shard.Options.Metrics.
func (m *Metrics) BucketsOwned(replica string, n int) {
	m.bucketsOwned.WithLabelValues(replica).Set(float64(n))
}

// Handover implements shard.Metrics: d is observed in
// converge_shard_handover_duration_seconds{replica,kind}, kind being
// "initial", "planned" or "takeover" (see shard.Metrics).
func (m *Metrics) Handover(replica, kind string, d time.Duration) {
	m.handover.WithLabelValues(replica, kind).Observe(d.Seconds())
}

var _ shard.Metrics = (*Metrics)(nil)
