package reconcile

// Sharder returns Options.Shard, nil without one, for debug pages and
// probes that describe the sharding (reconcile/observe/debugpage shows a Sharder
// with a Status method).
func (c *Controller[T]) Sharder() Sharder { return c.opts.Shard }

// ownerless returns the Sharder's ownerless buckets.
func (c *Controller[T]) ownerless() []int {
	if c.opts.Shard == nil {
		return nil
	}
	return c.opts.Shard.Ownerless()
}
