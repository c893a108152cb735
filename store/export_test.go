package store

// WithOrderFrom sets how many keys a Memory store knows from which a Diff
// keeps its write order (default 65,536), so that tests of the order need
// not fill a large store.
func WithOrderFrom(keys int) MemoryOption {
	return func(c *memoryConfig) { c.orderFrom = keys }
}

// WithDiffPage sets how many events a catch-up reads from a Memory store
// at a time (default 4,096), so that tests of paged catch-ups need not
// change thousands of keys.
func WithDiffPage(events int) MemoryOption {
	return func(c *memoryConfig) { c.diffPage = events }
}
