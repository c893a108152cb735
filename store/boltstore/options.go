package boltstore

import (
	"fmt"
	"math"
	"time"

	"github.com/converge-go/converge/store"
	bolt "go.etcd.io/bbolt"
)

// Defaults used when the matching Option is not given.
const (
	// DefaultHistory is the number of most recent revisions kept for
	// watches to resume from.
	DefaultHistory = 10_000
	// DefaultWatchBuffer is the number of live events a watcher may have
	// pending before it is ended with store.ErrLagging.
	DefaultWatchBuffer = 1024
	// DefaultLockTimeout bounds the wait for a file held by another Store.
	DefaultLockTimeout = time.Second
)

// Option configures Open. Options are checked by Open: an out-of-range value
// or a nil Option makes Open fail with an error matching store.ErrInvalid.
type Option func(*config)

type config struct {
	history      int
	maxValueSize int
	watchBuffer  int
	lockTimeout  time.Duration
}

// WithHistory sets how many of the most recent revisions are kept for watches
// to resume from (at least 1). Reopening a file with a smaller history drops
// the surplus at Open.
func WithHistory(revisions int) Option {
	return func(c *config) { c.history = revisions }
}

// WithMaxValueSize sets the largest encoded value, in bytes, that writes
// accept (at least 1, at most bbolt's limit); larger values fail with
// store.ErrInvalid. The default is store.DefaultMaxValueSize.
func WithMaxValueSize(bytes int) Option {
	return func(c *config) { c.maxValueSize = bytes }
}

// WithWatchBuffer sets how many live events a watcher may have pending before
// it is ended with store.ErrLagging (at least 1).
func WithWatchBuffer(events int) Option {
	return func(c *config) { c.watchBuffer = events }
}

// WithLockTimeout sets how long Open waits for a file held by another Store
// before failing with ErrLocked (more than 0).
func WithLockTimeout(d time.Duration) Option {
	return func(c *config) { c.lockTimeout = d }
}

func newConfig(opts []Option) (config, error) {
	c := config{
		history:      DefaultHistory,
		maxValueSize: store.DefaultMaxValueSize,
		watchBuffer:  DefaultWatchBuffer,
		lockTimeout:  DefaultLockTimeout,
	}
	for i, o := range opts {
		if o == nil {
			return c, fmt.Errorf("%w: option %d is nil", store.ErrInvalid, i)
		}
		o(&c)
	}
	switch {
	case c.history < 1 || c.history > math.MaxInt32:
		return c, fmt.Errorf("%w: history of %d revisions, want 1 to %d", store.ErrInvalid, c.history, math.MaxInt32)
	case c.maxValueSize < 1 || c.maxValueSize > maxEncodedValue:
		return c, fmt.Errorf("%w: max value size %d, want 1 to %d", store.ErrInvalid, c.maxValueSize, maxEncodedValue)
	case c.watchBuffer < 1:
		return c, fmt.Errorf("%w: watch buffer of %d events, want at least 1", store.ErrInvalid, c.watchBuffer)
	case c.lockTimeout <= 0:
		return c, fmt.Errorf("%w: lock timeout %v, want more than 0", store.ErrInvalid, c.lockTimeout)
	}
	return c, nil
}

// maxEncodedValue leaves room in a bbolt value for the record header and the
// key that history records carry next to the value.
const maxEncodedValue = bolt.MaxValueSize - historyHeaderLen - store.MaxKeyLen
