package dependency

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Set is a group of dependencies (a controller's, a manager's) and what
// they say together: whether one is down, and since when. Sets holding one
// Dependency share its state and its checks. Its methods are safe for
// concurrent use; Down takes no lock, States and Err copy each
// dependency's state under its lock.
type Set struct {
	deps []*Dependency

	mu sync.Mutex
	// changed is closed when a dependency goes down while none was, or the
	// last one down comes back up; nil until Watch asks for it. wasDown is
	// what Watch answered when it made changed.
	changed chan struct{}
	wasDown bool
	running atomic.Bool
}

// NewSet returns the set of deps, in the order given. A Dependency new to
// every Set is up (since now) until its checks say otherwise; one another
// Set holds keeps its state. A nil dependency, one without a Name (or one
// not printable UTF-8) or a Check, two with one Name, or a negative
// Interval or FailureThreshold is an error matching ErrInvalid.
func NewSet(deps ...*Dependency) (*Set, error) {
	for i, d := range deps {
		if err := refused(d, deps[:i]); err != nil {
			return nil, fmt.Errorf("%w: dependency %d: %s", ErrInvalid, i, err)
		}
	}
	s := &Set{deps: slices.Clone(deps)}
	now := time.Now()
	for _, d := range deps {
		d.adopt(s, now)
	}
	return s, nil
}

// refused says why d cannot join the dependencies before it in a Set; nil
// if it can.
func refused(d *Dependency, before []*Dependency) error {
	if d == nil {
		return errors.New("nil")
	}
	for _, o := range before {
		if o == d {
			return fmt.Errorf("%q is given twice", d.Name)
		}
		if o.Name == d.Name {
			return fmt.Errorf("the Name %q is taken by another Dependency: give the same *Dependency to everything that needs it", d.Name)
		}
	}
	return d.invalid()
}

// Run checks every dependency of the set until ctx ends, then returns nil.
// A dependency no other Set runs is checked at once and then every
// Interval; one another Set runs already keeps its checks, which the last
// Set to stop ends. Run returns once the checks it ended have returned.
// Calling Run while it runs returns ErrAlreadyRunning; it may be called
// again once it has returned.
func (s *Set) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	defer s.running.Store(false)
	for _, d := range s.deps {
		d.join(ctx)
	}
	<-ctx.Done()
	var ended []<-chan struct{}
	for _, d := range s.deps {
		if done := d.leave(); done != nil {
			ended = append(ended, done)
		}
	}
	for _, done := range ended {
		<-done
	}
	return nil
}

// Blame takes down at once the dependency err was marked with by Down, if
// it is one of the set's (it counts as a failure, with the marked error's
// text), and reports whether it is. It is down for every Set holding it;
// its next successful check brings it back up.
func (s *Set) Blame(err error) bool {
	name, cause, ok := blamed(err)
	if !ok {
		return false
	}
	i := slices.IndexFunc(s.deps, func(d *Dependency) bool { return d.spec.name == name })
	if i < 0 {
		return false
	}
	s.deps[i].blame(cause.Error())
	return true
}

// Down reports whether a dependency of the set is down now. It reads one
// atomic value per dependency and takes no lock.
func (s *Set) Down() bool {
	for _, d := range s.deps {
		if d.down.Load() {
			return true
		}
	}
	return false
}

// Watch reports whether a dependency is down now, and returns a channel
// that is closed when that answer changes: when the first dependency goes
// down, or the last one down comes back up.
func (s *Set) Watch() (down bool, changed <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	down = s.Down()
	if s.changed != nil && down != s.wasDown {
		close(s.changed) // a change not yet told: tell it now
		s.changed = nil
	}
	if s.changed == nil {
		s.changed, s.wasDown = make(chan struct{}), down
	}
	return down, s.changed
}

// changedDown is told by a dependency of s that it went down or came back
// up, after it did: it closes the channel of Watch if the answer changed.
func (s *Set) changedDown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed != nil && s.Down() != s.wasDown {
		close(s.changed)
		s.changed = nil
	}
}

// States returns the state of every dependency, in the order NewSet was
// given them.
func (s *Set) States() []State {
	out := make([]State, len(s.deps))
	for i, d := range s.deps {
		out[i] = d.snapshot()
	}
	return out
}

// Err returns nil while every dependency is up. Otherwise it returns one
// error per dependency down, joined, each matching ErrDown and reading
// "dependency: down: NAME since TIME (failures: N): LAST ERROR".
func (s *Set) Err() error {
	var errs []error
	for _, d := range s.deps {
		if !d.down.Load() {
			continue
		}
		if st := d.snapshot(); st.Down {
			errs = append(errs, fmt.Errorf("%w: %s since %s (failures: %d): %s",
				ErrDown, st.Name, st.Since.UTC().Format(time.RFC3339), st.Failures, st.LastError))
		}
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}
