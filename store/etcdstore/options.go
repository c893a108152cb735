package etcdstore

import (
	"cmp"
	"fmt"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/internal/codecopt"
	"github.com/converge-go/converge/store/snapshot"
)

// Option configures New. Options are checked by New: zero selects the
// default, and an out-of-range value (negative, or below a minimum) or a nil
// Option makes New fail with an error matching store.ErrInvalid.
type Option func(*config)

type config struct {
	codec        any // store.Codec[T], checked by New
	codecSet     bool
	maxValueSize int
	openTimeout  time.Duration
	valueCheck   snapshot.ValueCheck // Restore only
}

// DefaultWatchOpenTimeout bounds the opening of a watch unless
// WithWatchOpenTimeout says otherwise.
const DefaultWatchOpenTimeout = 5 * time.Second

// WithWatchOpenTimeout bounds how long Watch waits for the cluster to
// confirm a new watch (at least 1 ms): past it, Watch fails with
// store.ErrUnavailable. It bounds only the opening; the watch then lasts as
// long as its context. The default is DefaultWatchOpenTimeout.
func WithWatchOpenTimeout(d time.Duration) Option {
	return func(c *config) { c.openTimeout = d }
}

// WithCodec sets the Codec that encodes values (store.JSON by default). Its
// type parameter must be the Store's.
func WithCodec[T any](codec store.Codec[T]) Option {
	return func(c *config) { c.codec, c.codecSet = codec, true }
}

// WithValueCheck sets the check Restore runs on every value of the
// snapshot it restores (none by default): a value it refuses refuses the
// whole restore, naming the key (snapshot.ErrUnservable), and nothing is
// written. A store served through a layer sets it to the layer's reading
// of a stored value (snapshot.Decodes with the store's codec and the
// layer's check), so that no value is restored that its reads and writes
// would then fail on. New ignores it.
func WithValueCheck(check snapshot.ValueCheck) Option {
	return func(c *config) { c.valueCheck = check }
}

// WithMaxValueSize sets the largest encoded value, in bytes, that writes
// accept (at least 1); larger values fail with store.ErrInvalid before any
// request is sent. The default is store.DefaultMaxValueSize. The cluster has
// its own request limit (etcd's --max-request-bytes, 1.5 MiB by default) and
// the client its own (MaxCallSendMsgSize, 2 MiB by default): a request over
// either also fails with store.ErrInvalid.
func WithMaxValueSize(bytes int) Option {
	return func(c *config) { c.maxValueSize = bytes }
}

func newConfig[T any](opts []Option) (store.Codec[T], config, error) {
	var c config
	for _, o := range opts {
		if o == nil {
			return nil, c, fmt.Errorf("%w: nil option", store.ErrInvalid)
		}
		o(&c)
	}
	if c.maxValueSize < 0 {
		return nil, c, fmt.Errorf("%w: max value size %d, want at least 1", store.ErrInvalid, c.maxValueSize)
	}
	if c.openTimeout < 0 || c.openTimeout > 0 && c.openTimeout < time.Millisecond {
		return nil, c, fmt.Errorf("%w: watch open timeout %v, want at least 1ms", store.ErrInvalid, c.openTimeout)
	}
	c.maxValueSize = cmp.Or(c.maxValueSize, store.DefaultMaxValueSize)
	c.openTimeout = cmp.Or(c.openTimeout, DefaultWatchOpenTimeout)
	codec, err := codecopt.Resolve[T](c.codecSet, c.codec)
	return codec, c, err
}
