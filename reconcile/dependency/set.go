package dependency

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// Set checks a group of dependencies and keeps their states; a controller
// or a manager owns one. Its methods are safe for concurrent use; States,
// Err and Watch take one lock and copy what they return.
type Set struct {
	deps []Dependency // with their defaults filled in

	mu     sync.Mutex
	states []State // one per dependency, in deps' order
	down   int     // how many states are down
	// changed is closed when down leaves zero or comes back to it; nil
	// until Watch asks for it.
	changed chan struct{}
	running atomic.Bool
}

// NewSet returns the set of deps, in the order given, every one up (since
// now) until its checks say otherwise. It fills in their defaults; a
// dependency without a Name (or one not printable UTF-8) or a Check, two
// with one Name, or a negative Interval or FailureThreshold is an error
// matching ErrInvalid.
func NewSet(deps ...Dependency) (*Set, error) {
	s := &Set{deps: make([]Dependency, len(deps)), states: make([]State, len(deps))}
	now := time.Now()
	for i, d := range deps {
		if err := checkDependency(d, deps[:i]); err != nil {
			return nil, fmt.Errorf("%w: dependency %d: %s", ErrInvalid, i, err)
		}
		if d.Interval == 0 {
			d.Interval = DefaultInterval
		}
		if d.FailureThreshold == 0 {
			d.FailureThreshold = DefaultFailureThreshold
		}
		s.deps[i] = d
		s.states[i] = State{Name: d.Name, Since: now}
	}
	return s, nil
}

// checkDependency says what is wrong with d, the dependencies before it
// being before; nil if nothing.
func checkDependency(d Dependency, before []Dependency) error {
	switch {
	case d.Name == "":
		return errors.New("a Name is required")
	case !utf8.ValidString(d.Name) || strings.ContainsFunc(d.Name, func(r rune) bool { return !unicode.IsPrint(r) }):
		return fmt.Errorf("the Name %q is not printable UTF-8", d.Name)
	case slices.ContainsFunc(before, func(o Dependency) bool { return o.Name == d.Name }):
		return fmt.Errorf("the Name %q is taken", d.Name)
	case d.Check == nil:
		return fmt.Errorf("%q has no Check", d.Name)
	case d.Interval < 0 || d.FailureThreshold < 0:
		return fmt.Errorf("%q has a negative Interval or FailureThreshold", d.Name)
	}
	return nil
}

// Run checks every dependency, each from a goroutine of its own, at once
// and then every Interval, until ctx ends; it then waits for the checks in
// flight and returns nil. A check cut short by the end of ctx counts for
// nothing. Calling Run while it runs returns ErrAlreadyRunning; it may be
// called again once it has returned.
func (s *Set) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	defer s.running.Store(false)
	var wg sync.WaitGroup
	for i := range s.deps {
		wg.Go(func() { s.follow(ctx, i) })
	}
	<-ctx.Done()
	wg.Wait()
	return nil
}

// follow checks dependency i every Interval until ctx ends. The ticker
// keeps the checks an Interval apart however long each takes (at most an
// Interval: its timeout).
func (s *Set) follow(ctx context.Context, i int) {
	d := s.deps[i]
	tick := time.NewTicker(d.Interval)
	defer tick.Stop()
	for {
		err := check(ctx, d)
		if ctx.Err() != nil {
			return
		}
		s.record(i, err, time.Now())
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}

// check runs d's check under a timeout of its Interval, turning a panic
// into an error.
func check(ctx context.Context, d Dependency) (err error) {
	cctx, cancel := context.WithTimeout(ctx, d.Interval)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("check panicked: %v", p)
		}
	}()
	err = d.Check(cctx)
	if err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("check timed out after %v: %w", d.Interval, err)
	}
	return err
}

// record applies the result of a check of dependency i that ended at now.
func (s *Set) record(i int, err error, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.states[i]
	st.Checked = now
	if err != nil {
		s.fail(i, err.Error(), now, s.deps[i].FailureThreshold)
		return
	}
	st.Failures = 0
	if st.Down {
		st.Down, st.Since = false, now
		s.count(-1)
	}
}

// fail counts a failure of dependency i at now, with its error text msg:
// the threshold-th in a row takes it down. s.mu is held.
func (s *Set) fail(i int, msg string, now time.Time, threshold int) {
	st := &s.states[i]
	st.Failures++
	st.LastError = msg
	if !st.Down && st.Failures >= threshold {
		st.Down, st.Since = true, now
		s.count(+1)
	}
}

// count changes the number of dependencies down by delta, and tells the
// watchers when that takes it from zero or back to it. s.mu is held.
func (s *Set) count(delta int) {
	was := s.down > 0
	s.down += delta
	if was != (s.down > 0) && s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// Blame takes down at once the dependency err was marked with by Down, if
// it is one of the set's (it counts as a failure, with the marked error's
// text), and reports whether it is. The dependency's next successful check
// brings it back up.
func (s *Set) Blame(err error) bool {
	name, cause, ok := blamed(err)
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.states, func(st State) bool { return st.Name == name })
	if i < 0 {
		return false
	}
	s.fail(i, cause.Error(), time.Now(), 1)
	return true
}

// Watch reports whether a dependency is down now, and returns a channel
// that is closed when that answer changes: when the first dependency goes
// down, or the last one down comes back up.
func (s *Set) Watch() (down bool, changed <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.down > 0, s.changed
}

// States returns the state of every dependency, in the order NewSet was
// given them.
func (s *Set) States() []State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.states)
}

// Err returns nil while every dependency is up. Otherwise it returns one
// error per dependency down, joined, each matching ErrDown and reading
// "dependency: down: NAME since TIME (failures: N): LAST ERROR".
func (s *Set) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down == 0 {
		return nil
	}
	var errs []error
	for _, st := range s.states {
		if st.Down {
			errs = append(errs, fmt.Errorf("%w: %s since %s (failures: %d): %s",
				ErrDown, st.Name, st.Since.UTC().Format(time.RFC3339), st.Failures, st.LastError))
		}
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}
