package boltstore

import (
	"cmp"
	"fmt"
	"math"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/internal/codecopt"
	"github.com/converge-go/converge/store/snapshot"
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
	// DefaultRevisionBump is how far above a snapshot's revision a restored
	// store's revisions start: a billion, the bump etcd's documentation
	// suggests for its own restore (etcdutl snapshot restore
	// --bump-revision). It must exceed the writes the lost store took after
	// the snapshot, which a client may have seen; at a thousand writes a
	// second, a billion is eleven days of them.
	DefaultRevisionBump = 1_000_000_000
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
	bump         int64               // Restore and OpenOrRecover only
	valueCheck   snapshot.ValueCheck // Restore and OpenOrRecover only
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

// WithRevisionBump sets how far above a snapshot's revision Restore and
// OpenOrRecover start the revisions of the store they restore (1 to
// snapshot.MaxRevision; DefaultRevisionBump by default). Open ignores it.
func WithRevisionBump(revisions int64) Option {
	return func(c *config) { c.bump = revisions }
}

// WithValueCheck sets the check Restore and OpenOrRecover run on every
// value of the snapshot they restore (none by default): a value it refuses
// refuses the whole restore, naming the key (snapshot.ErrUnservable), and
// nothing is written. A store served through a layer sets it to the
// layer's reading of a stored value (snapshot.Decodes with the store's
// codec and the layer's check), so that no value is restored that its
// reads and writes would then fail on. Open ignores it.
func WithValueCheck(check snapshot.ValueCheck) Option {
	return func(c *config) { c.valueCheck = check }
}

// WithLockTimeout sets how long Open waits for a file held by another Store
// before failing with ErrLocked (default DefaultLockTimeout).
func WithLockTimeout(d time.Duration) Option {
	return func(c *config) { c.lockTimeout = d }
}

// newConfig applies opts, fills in the defaults for zero values and checks
// the ranges; it returns the codec for values of type T.
func newConfig[T any](opts []Option) (store.Codec[T], config, error) {
	c, err := parseOptions(opts)
	if err != nil {
		return nil, c, err
	}
	codec, err := codecopt.Resolve[T](c.codecSet, c.codec)
	return codec, c, err
}

// parseOptions is newConfig without the codec, for Restore, which writes
// bytes.
func parseOptions(opts []Option) (config, error) {
	var c config
	for i, o := range opts {
		if o == nil {
			return c, fmt.Errorf("%w: option %d is nil", store.ErrInvalid, i)
		}
		o(&c)
	}
	switch {
	case c.history < 0 || c.history > math.MaxInt32:
		return c, fmt.Errorf("%w: history of %d revisions, want 1 to %d", store.ErrInvalid, c.history, math.MaxInt32)
	case c.maxValueSize < 0 || c.maxValueSize > maxEncodedValue:
		return c, fmt.Errorf("%w: max value size %d, want 1 to %d", store.ErrInvalid, c.maxValueSize, maxEncodedValue)
	case c.watchBuffer < 0:
		return c, fmt.Errorf("%w: watch buffer of %d events, want at least 1", store.ErrInvalid, c.watchBuffer)
	case c.lockTimeout < 0:
		return c, fmt.Errorf("%w: lock timeout %v, want more than 0", store.ErrInvalid, c.lockTimeout)
	case c.bump < 0 || c.bump > snapshot.MaxRevision:
		return c, fmt.Errorf("%w: revision bump of %d, want 1 to snapshot.MaxRevision", store.ErrInvalid, c.bump)
	}
	c.history = cmp.Or(c.history, DefaultHistory)
	c.maxValueSize = cmp.Or(c.maxValueSize, store.DefaultMaxValueSize)
	c.watchBuffer = cmp.Or(c.watchBuffer, DefaultWatchBuffer)
	c.lockTimeout = cmp.Or(c.lockTimeout, DefaultLockTimeout)
	c.bump = cmp.Or(c.bump, DefaultRevisionBump)
	return c, nil
}

// maxEncodedValue leaves room in a bbolt value for the record header and the
// key that history records carry next to the value.
const maxEncodedValue = bolt.MaxValueSize - historyHeaderLen - store.MaxKeyLen
