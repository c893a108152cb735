package drift

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/converge-go/converge/internal/invalid"
	"github.com/converge-go/converge/internal/running"
)

// ErrInvalid matches every error New returns for bad options, and the
// error of a Start of the zero Source or while another runs. errors.Is matches it with the
// ErrInvalid of every converge package (store.ErrInvalid included).
var ErrInvalid error = invalid.New("drift")

// ErrAlreadyRunning matches the error of a Start while another Start of
// the same Source runs, and the ErrAlreadyRunning of every converge
// package (reconcile.ErrAlreadyRunning included).
var ErrAlreadyRunning error = running.New("drift")

// Observed is an object of the world as one poll lists it.
type Observed struct {
	// Key is the controller's key for the object: the key whose reconcile
	// converges it. Several objects may share a key (a database and its
	// grants): the key is woken when any of them changes, appears or
	// vanishes, in whatever order they are listed.
	Key string
	// Fingerprint is what the operator compares, in any form: a role's
	// attributes as read from pg_authid, or a hash of them (Fingerprint).
	// A poll that lists the fingerprint expected of a key (see
	// Source.Reconciled) sees no drift there.
	Fingerprint string
}

// ListFunc lists the world as it is. It returns an error rather than a
// partial listing: an object missing from a successful listing has
// vanished, and its key is woken.
type ListFunc func(ctx context.Context) ([]Observed, error)

// Options configure a Source. Every field has a working zero value.
type Options struct {
	// Name names the source in the controller's KeyState.Triggers
	// ("source NAME"), the debug page and the errors Start returns
	// (default "drift"). Name it for what it polls, as it should read
	// after "source ": "postgres roles". A controller's sources are told
	// apart by their names alone: give each its own.
	Name string
	// Interval is the time from the end of one poll to the start of the
	// next (default 1 minute).
	Interval time.Duration
	// Jitter lengthens each Interval by a random part of up to Jitter
	// times it, from 0 (none, the default) to 1, so that replicas or
	// sources started together do not poll together.
	Jitter float64
	// PerSecond and Burst limit how fast keys are woken (a token bucket,
	// golang.org/x/time/rate): a burst of changes wakes Burst keys at
	// once and then PerSecond keys a second, in the order the polls found
	// them, while polls go on; none is dropped. PerSecond defaults to 10
	// (math.Inf(1): no limit), Burst to PerSecond rounded up (at least 1).
	PerSecond float64
	Burst     int
	// WakeOnFirstPoll wakes every key the first poll lists. By default the
	// first poll wakes only the keys that differ from what Reconciled
	// reported, and learns the others as they are: a controller
	// reconciles every key of its store when it starts, so drift from
	// before the start is healed without it. Set it to also wake the keys
	// of objects that exist only in the world (to delete what is no longer
	// desired).
	WakeOnFirstPoll bool
}

const (
	defaultInterval  = time.Minute
	defaultPerSecond = 10
)

// check refuses options out of range, with an error matching ErrInvalid.
func (o *Options) check() error {
	switch {
	case o.Interval < 0:
		return fmt.Errorf("%w: Interval is negative (%v)", ErrInvalid, o.Interval)
	case !(o.Jitter >= 0 && o.Jitter <= 1):
		return fmt.Errorf("%w: Jitter %v is not between 0 and 1", ErrInvalid, o.Jitter)
	case !(o.PerSecond >= 0):
		return fmt.Errorf("%w: PerSecond %v is negative", ErrInvalid, o.PerSecond)
	case o.Burst < 0:
		return fmt.Errorf("%w: Burst is negative (%d)", ErrInvalid, o.Burst)
	}
	return nil
}

// fillDefaults gives every zero field its default.
func (o *Options) fillDefaults() {
	if o.Name == "" {
		o.Name = "drift"
	}
	if o.Interval == 0 {
		o.Interval = defaultInterval
	}
	if o.PerSecond == 0 {
		o.PerSecond = defaultPerSecond
	}
	if o.Burst == 0 {
		o.Burst = int(max(1, min(math.Ceil(o.PerSecond), math.MaxInt32)))
	}
}

// Source is a reconcile.Source that polls the world and wakes the keys
// whose objects drifted. Make one with New; the zero Source's Start
// returns an error matching ErrInvalid.
type Source struct {
	list    ListFunc
	opts    Options
	limiter *rate.Limiter

	// Owned by the running Start (one at a time): the keys found but not
	// yet woken.
	pending pending

	mu      sync.Mutex
	expect  expected // what each key should be listed with
	running bool
	err     error // the last poll's
}

// New returns a Source over list. A nil list or an option out of range
// returns an error matching ErrInvalid.
func New(list ListFunc, opts Options) (*Source, error) {
	if list == nil {
		return nil, fmt.Errorf("%w: New: nil list", ErrInvalid)
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	opts.fillDefaults()
	limit := rate.Limit(opts.PerSecond)
	if math.IsInf(opts.PerSecond, 1) {
		limit = rate.Inf
	}
	return &Source{list: list, opts: opts, limiter: rate.NewLimiter(limit, opts.Burst)}, nil
}

// Name returns Options.Name, or its default.
func (s *Source) Name() string { return s.opts.Name }

// Err returns the error of the latest poll: nil if it succeeded, or if
// there has been none. A readiness check can report it.
func (s *Source) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Start polls the world at once and then every Interval, calling enqueue
// for each key that drifted (listed with a fingerprint other than the one
// expected of it, appeared or vanished: see Reconciled), at the rate
// Options allow. list is called from Start's goroutine, one call at a
// time. Start returns nil when ctx ends. A poll that fails wakes nothing
// and keeps what is expected of each key and the keys still to wake:
// Start returns its error (wrapped, naming the source), and a controller
// logs it and starts the source again after a backoff; that Start polls
// at once and compares with what is expected, so drift from before the
// failure is woken, and nothing else. Start refuses to run twice at once
// (an error matching ErrAlreadyRunning). The Source holds a fingerprint per key
// of the last listing, and per key reported since it began.
func (s *Source) Start(ctx context.Context, enqueue func(key string)) error {
	if err := s.begin(); err != nil {
		return err
	}
	defer s.end()
	poll := time.NewTimer(0)
	defer poll.Stop()
	token := time.NewTimer(time.Hour)
	token.Stop()
	defer token.Stop()
	for {
		if d, more := s.wakeAllowed(enqueue); more {
			token.Reset(d)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-token.C:
		case <-poll.C:
			if err := s.poll(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("drift source %q: list: %w", s.opts.Name, err)
			}
			poll.Reset(s.wait())
		}
	}
}

// Reconciled tells the source what the reconciler of key left in the
// world when its reconcile ended: the fingerprints of the key's objects
// as it made or observed them, in any order, as the ListFunc lists them
// (none: the key has no object). That is what is expected of the key
// until a poll that begins after it, which wakes the key if the world
// differs, whatever happened since, and takes what it lists instead: an
// object the reconciler made and someone dropped before that poll is
// woken, and the reconciler's own change wakes nothing. Reported while a
// poll lists, it is not overwritten by that poll's listing (which may be
// older), and costs at most one needless wake-up, never a missed one.
// Fingerprints that the ListFunc never lists for the key wake it at
// every poll. It never blocks on a poll; on a nil Source it does nothing.
func (s *Source) Reconciled(key string, fingerprints ...string) {
	if s == nil {
		return
	}
	present := len(fingerprints) > 0
	var fp string
	if present {
		fp = combined(slices.Clone(fingerprints))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expect.reported(key, fp, present)
}

// Drifted tells the source that the reconcile of key ended with the world
// not as the reconciler wants it: a look after its own change found the
// key's objects otherwise (changed by hand meanwhile, or not yet showing
// the change). The first poll that begins after it wakes key, whatever it
// lists; a report after it (Reconciled) replaces it. It never blocks on a
// poll; on a nil Source it does nothing.
func (s *Source) Drifted(key string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expect.drifted(key)
}

func (s *Source) begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.list == nil {
		return fmt.Errorf("%w: a drift Source is made by New", ErrInvalid)
	}
	if s.running {
		return fmt.Errorf("%w: source %q", ErrAlreadyRunning, s.opts.Name)
	}
	s.running = true
	return nil
}

func (s *Source) end() {
	s.mu.Lock()
	s.running = false
	s.mu.Unlock()
}

// wait returns the time until the next poll: Interval, plus its jitter.
func (s *Source) wait() time.Duration {
	d := s.opts.Interval
	if extra := int64(s.opts.Jitter * float64(d)); extra > 0 {
		d += time.Duration(rand.Int64N(extra + 1))
	}
	return d
}
