package shard

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/store"
)

// Defaults of Options.
const (
	// DefaultBuckets is the bucket count when Options.Buckets is zero.
	DefaultBuckets = 1024
	// MaxBuckets is the largest bucket count (the plan record holds one
	// entry per bucket).
	MaxBuckets = 1 << 17
	// DefaultPrefix is where the records live when Options.Prefix is empty.
	DefaultPrefix = "shard/"
	// DefaultDrain is Options.Drain when it is zero.
	DefaultDrain = 250 * time.Millisecond
)

// Options configure New. Only ID is required.
type Options struct {
	// ID names this replica; unique among the replicas sharing Prefix and
	// stable across its restarts (a host name, a pod name). Required.
	ID string
	// Prefix is the key prefix of the sharding records (default
	// DefaultPrefix). Every replica of a deployment uses the same one; it
	// must not overlap the controller's own keys.
	Prefix string
	// Buckets is the number of buckets keys map to (default DefaultBuckets,
	// at most MaxBuckets). Every replica must use the same count, forever:
	// see Bucket.
	Buckets int
	// TTL is the membership lease's TTL (default lock.DefaultTTL): a replica
	// that stops renewing is declared dead, and its buckets are given to
	// others, once its record has been seen unchanged for TTL. On etcd,
	// whole seconds.
	TTL time.Duration
	// Drain is how long an owner handing a bucket over waits between
	// cancelling its in-flight reconciles of the bucket and naming the new
	// owner (default DefaultDrain): reconcilers that return within Drain
	// of their context's end never overlap the new owner's.
	Drain time.Duration
	// Logger receives the replica's logs (nil: discard).
	Logger *slog.Logger
	// Metrics receives the replica's measurements (nil: none).
	Metrics Metrics
}

// withDefaults fills in zero fields and checks the result.
func (o Options) withDefaults() (Options, error) {
	if o.ID == "" {
		return o, fmt.Errorf("%w: Options.ID is required", ErrInvalid)
	}
	if strings.Contains(o.ID, "/") {
		return o, fmt.Errorf("%w: Options.ID %q contains a slash", ErrInvalid, o.ID)
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if err := store.ValidateKey(o.Prefix + "members/" + o.ID); err != nil {
		return o, fmt.Errorf("%w: Options.ID or Prefix: %w", ErrInvalid, err)
	}
	switch {
	case o.Buckets == 0:
		o.Buckets = DefaultBuckets
	case o.Buckets < 0 || o.Buckets > MaxBuckets:
		return o, fmt.Errorf("%w: Options.Buckets %d out of [1, %d]", ErrInvalid, o.Buckets, MaxBuckets)
	}
	switch {
	case o.TTL == 0:
		o.TTL = lock.DefaultTTL
	case o.TTL < 0:
		return o, fmt.Errorf("%w: negative Options.TTL %v", ErrInvalid, o.TTL)
	}
	switch {
	case o.Drain == 0:
		o.Drain = DefaultDrain
	case o.Drain < 0:
		return o, fmt.Errorf("%w: negative Options.Drain %v", ErrInvalid, o.Drain)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = nopMetrics{}
	}
	return o, nil
}
