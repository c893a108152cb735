package store

import "fmt"

// Defaults of NewMemory.
const (
	// DefaultHistory is the number of revisions of change history a Memory
	// store retains for watches to resume from.
	DefaultHistory = 10_000
	// DefaultWatchLag is how many revisions a Memory watcher may fall behind
	// the store before it is ended with ErrLagging.
	DefaultWatchLag = 1_000
	// defaultWatchBuffer is the capacity of a watcher's Events channel.
	defaultWatchBuffer = 64
)

// MemoryOption configures NewMemory.
type MemoryOption func(*memoryConfig)

type memoryConfig struct {
	invalid    error // why an option was refused; every operation returns it
	history    int
	watchLag   int64
	onMutation func(error)
	checkMut   bool
	tombstones int
	orderFrom  int // keys known from which a Diff keeps the write order
	diffPage   int // events in a page of a catch-up (diffPager)
}

// WithHistory sets how many revisions of change history the store retains
// (default DefaultHistory). A Watch after a revision older than that fails
// with ErrCompacted. Zero selects the default; a negative value makes every
// operation of the store fail with ErrInvalid (NewMemory cannot fail).
func WithHistory(revisions int) MemoryOption {
	return func(c *memoryConfig) {
		switch {
		case revisions < 0:
			c.refuse("WithHistory(%d)", revisions)
		case revisions > 0:
			c.history = revisions
		}
	}
}

// WithWatchLag sets how many revisions the store may run ahead of a watcher
// (beyond the backlog the watcher started with) before the watcher is ended
// with ErrLagging, so that a slow reader never holds writers back (default
// DefaultWatchLag). Keep it below the history size so that a lagging watcher
// can resume from its last event. Zero selects the default; a negative
// value makes every operation of the store fail with ErrInvalid.
func WithWatchLag(revisions int) MemoryOption {
	return func(c *memoryConfig) {
		switch {
		case revisions < 0:
			c.refuse("WithWatchLag(%d)", revisions)
		case revisions > 0:
			c.watchLag = int64(revisions)
		}
	}
}

// refuse records the first option refused.
func (c *memoryConfig) refuse(format string, args ...any) {
	if c.invalid == nil {
		c.invalid = fmt.Errorf("%w: NewMemory option "+format, append([]any{ErrInvalid}, args...)...)
	}
}

// WithMutationCheck turns on detection of changes made to values the store
// has handed out (which are shared and must be treated as immutable). The
// store keeps a fingerprint of every value it holds and, at the start of each
// operation, compares every retained value with its fingerprint. A mismatch
// is reported once, as an error matching ErrMutated: to report if it is not
// nil (and the operation then proceeds), else as the operation's error (and
// the operation does nothing else). Meant for tests: each operation then
// costs time proportional to the number of objects and history entries.
func WithMutationCheck(report func(error)) MemoryOption {
	return func(c *memoryConfig) {
		c.checkMut = true
		c.onMutation = report
	}
}
