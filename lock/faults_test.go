package lock

import (
	"sync"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
	"github.com/stretchr/testify/require"
)

// faultStore is the store one process sees, with that process's faults
// injected by a faultstore.Store: an unreachable store, renewals that
// hang, a frozen process, a refused watch. The windows below are on the
// synctest clock; the plan turns them into each call's decision.
type faultStore struct {
	*faultstore.Store[Record]

	mu         sync.Mutex
	failUntil  time.Time // every call but List and Revision fails before this
	hangUntil  time.Time // Update waits until this or until its ctx ends
	pauseUntil time.Time // Update waits until this, deaf to its ctx
	noWatch    bool      // Watch fails with ErrUnavailable
}

func newFaultStore(t testing.TB, s store.Store[Record]) *faultStore {
	f := &faultStore{}
	fs, err := faultstore.New(s, faultstore.Options{Plan: f.decide})
	require.NoError(t, err)
	f.Store = fs
	return f
}

// failFor makes every call fail for d from now.
func (f *faultStore) failFor(d time.Duration) { f.set(&f.failUntil, d) }

// hangFor makes Update calls wait until d from now, or until their context
// ends, as with a store that has stopped answering.
func (f *faultStore) hangFor(d time.Duration) { f.set(&f.hangUntil, d) }

// pauseFor freezes Update calls for d from now whatever their context says,
// then lets them through, as with a process stopped by a long pause with a
// renewal in flight.
func (f *faultStore) pauseFor(d time.Duration) { f.set(&f.pauseUntil, d) }

func (f *faultStore) set(until *time.Time, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	*until = time.Now().Add(d)
}

func (f *faultStore) setNoWatch(v bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noWatch = v
}

// decide is the plan: an Update first waits out a pause, then a hang, and
// fails if the failure window is still open when it is done waiting.
func (f *faultStore) decide(c faultstore.Call) faultstore.Decision {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	var d faultstore.Decision
	switch c.Op {
	case faultstore.OpList, faultstore.OpRevision:
		return d
	case faultstore.OpUpdate:
		d.Pause, d.Delay = max(f.pauseUntil.Sub(now), 0), max(f.hangUntil.Sub(now), 0)
	case faultstore.OpWatch:
		if f.noWatch {
			d.Fault = faultstore.Fail
			return d
		}
	}
	if now.Add(d.Pause + d.Delay).Before(f.failUntil) {
		d.Fault = faultstore.Fail
	}
	return d
}
