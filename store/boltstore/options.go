package boltstore

import (
	"cmp"
	"fmt"
	"math"
	"time"

	"github.com/converge-go/converge/internal/codecopt"
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

// Option configures Open. Options are checked by Open: zero selects the
// default, and an out-of-range value (negative, or beyond a limit) or a nil
// Option makes Open fail with an error matching store.ErrInvalid.
type Option func(*config)

type config struct {
	codec        any // store.Codec[T], checked by Open
	codecSet     bool
	history      int
	maxValueSize int
	watchBuffer  int
	lockTimeout  time.Duration
}

// WithCodec sets the Codec that encodes values (store.JSON by default). Its
// type parameter must be the Store's; Open refuses another with
// store.ErrInvalid.
func WithCodec[T any](codec store.Codec[T]) Option {
	return func(c *config) { c.codec, c.codecSet = codec, true }
}

// WithHistory sets how many of the most recent revisions are kept for watches
// to resume from (default DefaultHistory). Reopening a file with a smaller
// history drops the surplus at Open.
func WithHistory(revisions int) Option {
	return func(c *config) { c.history = revisions }
}

// WithMaxValueSize sets the largest encoded value, in bytes, that writes
// accept (at most bbolt's limit); larger values fail with
// store.ErrInvalid. The default is store.DefaultMaxValueSize.
func WithMaxValueSize(bytes int) Option {
	return func(c *config) { c.maxValueSize = bytes }
}

// WithWatchBuffer sets how many live events a watcher may have pending before
// it is ended with store.ErrLagging (default DefaultWatchBuffer).
func WithWatchBuffer(events int) Option {
	return func(c *config) { c.watchBuffer = events }
}

// WithLockTimeout sets how long Open waits for a file held by another Store
// before failing with ErrLocked (default DefaultLockTimeout).
func WithLockTimeout(d time.Duration) Option {
	return func(c *config) { c.lockTimeout = d }
}

// newConfig applies opts, fills in the defaults for zero values and checks
// the ranges; it returns the codec for values of type T.
func newConfig[T any](opts []Option) (store.Codec[T], config, error) {
	var c config
	for i, o := range opts {
		if o == nil {
			return nil, c, fmt.Errorf("%w: option %d is nil", store.ErrInvalid, i)
		}
		o(&c)
	}
	switch {
	case c.history < 0 || c.history > math.MaxInt32:
		return nil, c, fmt.Errorf("%w: history of %d revisions, want 1 to %d", store.ErrInvalid, c.history, math.MaxInt32)
	case c.maxValueSize < 0 || c.maxValueSize > maxEncodedValue:
		return nil, c, fmt.Errorf("%w: max value size %d, want 1 to %d", store.ErrInvalid, c.maxValueSize, maxEncodedValue)
	case c.watchBuffer < 0:
		return nil, c, fmt.Errorf("%w: watch buffer of %d events, want at least 1", store.ErrInvalid, c.watchBuffer)
	case c.lockTimeout < 0:
		return nil, c, fmt.Errorf("%w: lock timeout %v, want more than 0", store.ErrInvalid, c.lockTimeout)
	}
	c.history = cmp.Or(c.history, DefaultHistory)
	c.maxValueSize = cmp.Or(c.maxValueSize, store.DefaultMaxValueSize)
	c.watchBuffer = cmp.Or(c.watchBuffer, DefaultWatchBuffer)
	c.lockTimeout = cmp.Or(c.lockTimeout, DefaultLockTimeout)
	codec, err := codecopt.Resolve[T](c.codecSet, c.codec)
	return codec, c, err
}

// maxEncodedValue leaves room in a bbolt value for the record header and the
// key that history records carry next to the value.
const maxEncodedValue = bolt.MaxValueSize - historyHeaderLen - store.MaxKeyLen
