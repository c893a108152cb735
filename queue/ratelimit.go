package queue

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/converge-go/converge/internal/mapshrink"
	"github.com/converge-go/converge/internal/nilness"
)

// RateLimiter decides how long a key waits before a retry. Implementations
// are safe for concurrent use.
type RateLimiter[K comparable] interface {
	// When returns how long key should wait now, and counts one retry.
	When(key K) time.Duration
	// Forget resets key's state, as after a success.
	Forget(key K)
	// NumRequeues reports key's retries: the calls to When since Forget.
	// It is the count View.Retries, Item.Retries and reconcile's
	// Request.Retries report; it keeps client-go's name so that a
	// client-go workqueue rate limiter is a RateLimiter as it is.
	NumRequeues(key K) int
}

// DefaultRateLimiter returns the limiter a Queue uses when none is
// configured: the larger of a per-key exponential backoff (5 ms doubling up
// to 5 minutes, 10% jitter) and an overall token bucket (10 retries per
// second, bursts of 100, no delay longer than 30 seconds).
func DefaultRateLimiter[K comparable]() RateLimiter[K] {
	return NewMax(
		NewExponential[K](5*time.Millisecond, 5*time.Minute, 0.1),
		NewBucket[K](10, 100, 30*time.Second),
	)
}

// Exponential is a per-key exponential backoff: the n-th retry of a key
// since Forget waits base × 2^(n-1), capped at max, plus up to jitter × that
// delay of random extra (still capped at max).
type Exponential[K comparable] struct {
	base, max time.Duration
	jitter    float64

	mu       sync.Mutex
	failures map[K]int
	peak     int
	// keys is len(failures), kept under mu and readable without it: while
	// no key is backing off, Forget and NumRequeues, which a controller
	// calls on every reconcile, take no lock.
	keys atomic.Int64
}

// NewExponential returns an exponential backoff. base is clamped to at
// least 1 ns and maxDelay to at least base; jitter is clamped to [0, 1].
func NewExponential[K comparable](base, maxDelay time.Duration, jitter float64) *Exponential[K] {
	base = max(base, 1)
	return &Exponential[K]{
		base:     base,
		max:      max(maxDelay, base),
		jitter:   min(1, max(jitter, 0)),
		failures: make(map[K]int),
	}
}

// When counts a retry of key and returns its delay.
func (e *Exponential[K]) When(key K) time.Duration {
	e.mu.Lock()
	n := e.failures[key]
	e.failures[key] = n + 1
	e.keys.Store(int64(len(e.failures)))
	mapshrink.Note(e.failures, &e.peak)
	e.mu.Unlock()
	return e.delay(n)
}

// Delay returns the wait before the next try of a key that has had n
// retries (NumRequeues before When counts one more: 0 for a first
// failure), without jitter: base·2ⁿ, capped at the maximum. A reconciler
// can persist it (the time of its next try) from Request.Retries. When
// adds jitter of up to jitter·Delay(n), capped at the maximum.
func (e *Exponential[K]) Delay(n int) time.Duration {
	n = max(n, 0)
	d := e.max
	if n < 63 && e.base <= e.max>>n {
		d = e.base << n
	}
	return d
}

// delay returns the wait for the (n+1)-th retry, without overflow.
func (e *Exponential[K]) delay(n int) time.Duration {
	d := e.max
	// base << n stays below max as long as base <= max >> n.
	if n < 63 && e.base <= e.max>>n {
		d = e.base << n
	}
	if e.jitter > 0 {
		extra := time.Duration(rand.Float64() * e.jitter * float64(d))
		if extra > e.max-d {
			d = e.max // d+extra would pass the cap, or overflow
		} else {
			d += extra
		}
	}
	return d
}

// Forget resets key's backoff.
func (e *Exponential[K]) Forget(key K) {
	if e.keys.Load() == 0 {
		return // no key is backing off
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.failures, key)
	e.keys.Store(int64(len(e.failures)))
	e.failures = mapshrink.Shrunk(e.failures, &e.peak, mapshrink.Floor)
}

// NumRequeues reports key's retries since Forget.
func (e *Exponential[K]) NumRequeues(key K) int {
	if e.keys.Load() == 0 {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.failures[key]
}

// Bucket is an overall token bucket shared by every key (golang.org/x/time/rate):
// retries beyond the rate wait for a token, but never longer than a bound,
// so a storm of failures cannot push retries hours away. It keeps no
// per-key state.
type Bucket[K comparable] struct {
	limiter  *rate.Limiter
	maxDelay time.Duration
}

// NewBucket returns a token bucket of perSecond tokens per second with room
// for burst, whose delays never exceed maxDelay (no bound if maxDelay <= 0).
func NewBucket[K comparable](perSecond float64, burst int, maxDelay time.Duration) *Bucket[K] {
	return &Bucket[K]{limiter: rate.NewLimiter(rate.Limit(perSecond), max(burst, 1)), maxDelay: maxDelay}
}

// When takes a token and returns how long to wait for it. If the wait
// would exceed the bound, the token is given back and the bound returned.
func (b *Bucket[K]) When(K) time.Duration {
	now := time.Now()
	r := b.limiter.ReserveN(now, 1)
	if !r.OK() {
		return b.maxDelay
	}
	d := r.DelayFrom(now)
	if b.maxDelay > 0 && d > b.maxDelay {
		r.CancelAt(now)
		return b.maxDelay
	}
	return d
}

// Forget does nothing: the bucket has no per-key state.
func (b *Bucket[K]) Forget(K) {}

// NumRequeues is always 0: the bucket does not count per key.
func (b *Bucket[K]) NumRequeues(K) int { return 0 }

// Max combines limiters: the longest delay wins, Forget reaches all, and
// NumRequeues is the largest count. An empty Max delays nothing; nil
// entries are skipped.
type Max[K comparable] []RateLimiter[K]

// NewMax returns the combination of limiters. Nil limiters (and nil
// pointers) are left out.
func NewMax[K comparable](limiters ...RateLimiter[K]) Max[K] {
	m := make(Max[K], 0, len(limiters))
	for _, l := range limiters {
		if !nilness.Is(l) {
			m = append(m, l)
		}
	}
	return m
}

// When asks every limiter and returns the longest delay.
func (m Max[K]) When(key K) time.Duration {
	var d time.Duration
	for _, l := range m {
		if l != nil {
			d = max(d, l.When(key))
		}
	}
	return d
}

// Forget resets key in every limiter.
func (m Max[K]) Forget(key K) {
	for _, l := range m {
		if l != nil {
			l.Forget(key)
		}
	}
}

// NumRequeues returns the largest count among the limiters.
func (m Max[K]) NumRequeues(key K) int {
	var n int
	for _, l := range m {
		if l != nil {
			n = max(n, l.NumRequeues(key))
		}
	}
	return n
}
