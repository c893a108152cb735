package reconcile

// OwnerlessReporter is what a Sharder implements to tell which of its
// buckets of keys no replica works on now (reconcile/shard's Replica
// does). A controller whose Options.Shard implements it lists them in
// Health.Ownerless.
type OwnerlessReporter interface {
	// Ownerless returns the buckets with no working owner, in increasing
	// order; none when every bucket has one. It must be fast and safe for
	// concurrent use.
	Ownerless() []int
}

// Sharder returns Options.Shard, nil without one, for debug pages and
// probes that describe the sharding (reconcile/debugpage shows a Sharder
// with a Status method).
func (c *Controller[T]) Sharder() Sharder { return c.opts.Shard }

// ownerless returns the Sharder's ownerless buckets if it reports them.
func (c *Controller[T]) ownerless() []int {
	if r, ok := c.opts.Shard.(OwnerlessReporter); ok {
		return r.Ownerless()
	}
	return nil
}

// RecordPrefixer is what a Sharder implements to name the key prefix of
// its own records when they live in the controller's keyspace (they must,
// for their guards to be checked by the store: reconcile/shard's Replica
// does). New refuses a controller whose Prefix covers them, since its
// cache would read them as objects.
type RecordPrefixer interface {
	RecordPrefix() string
}
