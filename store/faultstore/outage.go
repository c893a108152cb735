package faultstore

import "fmt"

// Outage says how an unreachable store behaves.
type Outage uint8

const (
	// Up: no outage.
	Up Outage = iota
	// Loud: every call fails with store.ErrUnavailable and every watch ends
	// with store.ErrUnavailable, as when a connection is refused.
	Loud
	// Silent: every call fails with store.ErrUnavailable, while open
	// watches stay open, deliver nothing, do not end and leave progress
	// requests (store.ProgressRequester) unanswered, as an etcd member cut
	// off from its peers does. When the outage ends, they deliver what
	// happened meanwhile, in order, and answer the requests made during it.
	Silent
	// SilentHang is Silent, except that calls hang until their context ends
	// (failing with its error) or the outage ends (then they go ahead), as
	// calls to an unreachable host do.
	SilentHang
)

// String returns the outage's name.
func (o Outage) String() string {
	switch o {
	case Up:
		return "Up"
	case Loud:
		return "Loud"
	case Silent:
		return "Silent"
	case SilentHang:
		return "SilentHang"
	}
	return fmt.Sprintf("Outage(%d)", uint8(o))
}

func (o Outage) silent() bool { return o == Silent || o == SilentHang }

// SetOutage starts an outage of kind o, or ends the current one with Up.
// Starting a Loud outage breaks every open watch; a silent one holds them
// back; Up lets held-back watches deliver again and calls hung by
// SilentHang go ahead. An unknown kind counts as Loud.
func (s *Store[T]) SetOutage(o Outage) {
	if o > SilentHang {
		o = Loud
	}
	s.mu.Lock()
	s.outage = o
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	if o == Loud {
		s.BreakWatches()
	}
}

// Outage returns the current outage (Up if none).
func (s *Store[T]) Outage() Outage {
	o, _ := s.state()
	return o
}

// state returns the current outage and a channel closed when it changes.
func (s *Store[T]) state() (Outage, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outage, s.changed
}
