package schedule

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Entry is a key to wake at the slots of a schedule.
type Entry struct {
	Key      string
	Schedule Schedule // the zero Schedule: never woken
}

// ListFunc returns the keys to wake and their schedules, such as every
// BackupSchedule object's key and its parsed spec, read from the
// controller's cache (reconcile.Controller.Lister). An error makes the
// Source's Start return it.
type ListFunc func(ctx context.Context) ([]Entry, error)

// Options configure a Source. Every field has a working zero value.
type Options struct {
	// Name names the source in the controller's KeyState.Triggers
	// ("source NAME") and debug page (default "schedule"). Name it for
	// what it wakes, as it should read after "source ": "backup
	// schedules". A controller's sources are told apart by their names
	// alone: give each its own.
	Name string
	// Interval is how often list is called besides at each slot, so that
	// a schedule added or changed is followed within it (default 1
	// minute).
	Interval time.Duration
}

const defaultInterval = time.Minute

// Source is a reconcile.Source that wakes each listed key at each slot of
// its schedule. Make one with NewSource; the zero Source's Start returns
// an error matching ErrInvalid.
type Source struct {
	list ListFunc
	opts Options

	mu      sync.Mutex
	running bool
	cursor  time.Time // every slot up to here has been woken
}

// NewSource returns a Source over list. A nil list or a negative Interval
// returns an error matching ErrInvalid.
func NewSource(list ListFunc, opts Options) (*Source, error) {
	switch {
	case list == nil:
		return nil, fmt.Errorf("%w: NewSource: nil list", ErrInvalid)
	case opts.Interval < 0:
		return nil, fmt.Errorf("%w: NewSource: Interval is negative (%v)", ErrInvalid, opts.Interval)
	}
	if opts.Name == "" {
		opts.Name = "schedule"
	}
	if opts.Interval == 0 {
		opts.Interval = defaultInterval
	}
	return &Source{list: list, opts: opts}, nil
}

// Name returns Options.Name, or its default.
func (s *Source) Name() string { return s.opts.Name }

// Start wakes each listed key, by calling enqueue, at each slot of its
// schedule, until ctx ends (it then returns nil). The first Start of a
// Source counts slots from its own start: earlier ones are the
// reconciler's to catch up on (Due), since a controller reconciles every
// key when it starts. After that, slots that pass while the Source is not
// running (between a failed list and the restart, or between two runs)
// wake their keys once each when it starts again. A key listed with a new
// schedule follows it from the next call of list on. Each wake-up and each
// Interval calls list once and computes the next slot of every entry it
// returns. An error of list is returned, wrapped and naming the source;
// the controller logs it and starts the source again after its backoff.
// Start refuses to run twice at once (an error matching ErrAlreadyRunning).
func (s *Source) Start(ctx context.Context, enqueue func(key string)) error {
	if err := s.begin(); err != nil {
		return err
	}
	defer s.end()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		next, err := s.wake(ctx, enqueue)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("schedule source %q: list: %w", s.opts.Name, err)
		}
		timer.Reset(time.Until(next))
	}
}

func (s *Source) begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.list == nil {
		return fmt.Errorf("%w: a schedule Source is made by NewSource", ErrInvalid)
	}
	if s.running {
		return fmt.Errorf("%w: source %q", ErrAlreadyRunning, s.opts.Name)
	}
	s.running = true
	if s.cursor.IsZero() {
		s.cursor = time.Now()
	}
	return nil
}

func (s *Source) end() {
	s.mu.Lock()
	s.running = false
	s.mu.Unlock()
}

// wake lists the entries, wakes those with a slot since the cursor, moves
// the cursor to now, and returns when to look again: the soonest slot to
// come, or an Interval from now.
func (s *Source) wake(ctx context.Context, enqueue func(string)) (time.Time, error) {
	now := time.Now()
	entries, err := s.list(ctx)
	if err != nil {
		return time.Time{}, err
	}
	s.mu.Lock()
	cursor := s.cursor
	s.cursor = now
	s.mu.Unlock()
	next := now.Add(s.opts.Interval)
	for _, e := range entries {
		if slot := e.Schedule.Next(cursor); !slot.IsZero() && !slot.After(now) {
			enqueue(e.Key)
		}
		if slot := e.Schedule.Next(now); !slot.IsZero() && slot.Before(next) {
			next = slot
		}
	}
	return next, nil
}
