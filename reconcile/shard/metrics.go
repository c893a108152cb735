package shard

import "time"

// Metrics receives a Replica's measurements. A Prometheus adapter maps them
// to buckets_owned (a gauge per replica) and handover_duration_seconds (a
// histogram by kind). Methods are called from the Replica's goroutines,
// concurrently, and must not block.
type Metrics interface {
	// BucketsOwned reports how many buckets replica owns now.
	BucketsOwned(replica string, n int)
	// Handover reports that replica took a bucket: kind is "planned" (the
	// previous owner handed it over), "takeover" (the assigner gave it
	// after the previous owner had left or died) or "initial" (the bucket
	// had never had an owner), and d is the time from when
	// this replica first saw the plan name it the bucket's owner to when it
	// owned the bucket, on this replica's clock.
	Handover(replica, kind string, d time.Duration)
}

// nopMetrics is Options.Metrics when none is given.
type nopMetrics struct{}

func (nopMetrics) BucketsOwned(string, int)               {}
func (nopMetrics) Handover(string, string, time.Duration) {}
