package faultstore

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/converge-go/converge/store"
)

// Op is one kind of store call, or (combined with |) a set of them.
type Op uint16

// The calls of a store.Store.
const (
	OpGet Op = 1 << iota
	OpList
	OpRevision
	OpWatch
	OpCreate
	OpUpdate
	OpDelete
	// OpIdentity is store.Identifier's Identity.
	OpIdentity
	// OpBatch is store.BatchWriter's WriteBatch: one call for the batch.
	OpBatch

	// OpReads is every call that changes nothing, watches included.
	OpReads = OpGet | OpList | OpRevision | OpWatch | OpIdentity
	// OpWrites is every call that changes the store.
	OpWrites = OpCreate | OpUpdate | OpDelete | OpBatch
	// OpAll is every call.
	OpAll = OpReads | OpWrites
)

var opNames = []string{"Get", "List", "Revision", "Watch", "Create", "Update", "Delete", "Identity", "Batch"}

// String returns the call's name ("Get"), or the names of a set joined
// with "|".
func (o Op) String() string {
	var names []string
	for i, name := range opNames {
		if o&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	if len(names) == 0 || o&^OpAll != 0 {
		return fmt.Sprintf("Op(%#x)", uint16(o))
	}
	return strings.Join(names, "|")
}

// Fault is what happens to one call.
type Fault uint8

const (
	// None: the call goes through.
	None Fault = iota
	// Fail: the call fails with store.ErrUnavailable before it reaches the
	// store (for Watch: the watch is refused).
	Fail
	// Conflict: Update and Delete fail with store.ErrConflict before they
	// reach the store; other calls go through.
	Conflict
	// Lose: a write reaches the store, then its response is replaced by a
	// *LostResponseError; other calls fail as with Fail.
	Lose
	// Break: Watch opens and ends with store.ErrUnavailable once it has
	// delivered Decision.BreakAfter events (progress reports not counted);
	// other calls go through.
	Break
	// Compacted: Watch fails with store.ErrCompacted before it reaches the
	// store, as when the revision to resume from is no longer retained, so
	// that the caller must re-list; other calls go through.
	Compacted
)

// String returns the fault's name.
func (f Fault) String() string {
	switch f {
	case None:
		return "None"
	case Fail:
		return "Fail"
	case Conflict:
		return "Conflict"
	case Lose:
		return "Lose"
	case Break:
		return "Break"
	case Compacted:
		return "Compacted"
	}
	return fmt.Sprintf("Fault(%d)", uint8(f))
}

// Call describes a call about to be made, for a Plan to decide on.
type Call struct {
	Op Op
	// Key is the call's key, or its prefix for List and Watch ("" for
	// Revision and Identity).
	Key string
}

// Decision is what happens to one call. Its zero value lets the call
// through untouched. The steps run in this order: Pause, Delay, the
// outage (SetOutage), then Fault.
type Decision struct {
	Fault Fault
	// BreakAfter is the number of events a Break watch delivers before it
	// ends (0: it ends at once).
	BreakAfter int
	// Delay makes the call wait this long before it reaches the store. If
	// its context ends first, the call fails with the context's error (and
	// ErrNotSent). Use it for latency and for a store that does not answer.
	Delay time.Duration
	// Pause makes the call wait this long whatever its context says, then
	// go ahead with a context that is never cancelled, as a call in flight
	// in a process frozen by a long pause lands late.
	Pause time.Duration
}

// Plan decides each call's fault. It is called concurrently, before every
// call of the Store, and must be safe for that; it must not call the Store.
type Plan func(Call) Decision

// Script returns a Plan that gives the decisions in order, one per call,
// and lets every call through once they are used up.
func Script(decisions ...Decision) Plan {
	var mu sync.Mutex
	return func(Call) Decision {
		mu.Lock()
		defer mu.Unlock()
		if len(decisions) == 0 {
			return Decision{}
		}
		d := decisions[0]
		decisions = decisions[1:]
		return d
	}
}

// Rates are random faults: per call of Ops, one draw chooses an injected
// error with probability Error, else (Update and Delete only) a conflict
// with probability Conflict, else (writes only) a lost response with
// probability Lost; every watch that opens breaks after about
// BreakWatchEvery events; every call waits up to MaxLatency. The zero
// Rates inject nothing.
type Rates struct {
	// Ops are the calls that draw faults; 0 means OpAll.
	Ops Op
	// Error, Conflict and Lost are probabilities, each at least 0 and
	// together at most 1.
	Error, Conflict, Lost float64
	// MaxLatency delays each call by a duration drawn uniformly from 0 to
	// MaxLatency (0: no delay).
	MaxLatency time.Duration
	// BreakWatchEvery, if above 0, breaks each watch after a number of
	// events drawn uniformly from BreakWatchEvery/2 to
	// BreakWatchEvery*3/2.
	BreakWatchEvery int
}

// check returns an error matching store.ErrInvalid if r is out of range.
func (r Rates) check() error {
	if !(r.Error >= 0 && r.Conflict >= 0 && r.Lost >= 0 && r.Error+r.Conflict+r.Lost <= 1) {
		return fmt.Errorf("%w: faultstore: probabilities %v error, %v conflict and %v lost, want each at least 0 and at most 1 together",
			store.ErrInvalid, r.Error, r.Conflict, r.Lost)
	}
	if r.MaxLatency < 0 || r.BreakWatchEvery < 0 || r.Ops&^OpAll != 0 {
		return fmt.Errorf("%w: faultstore: negative MaxLatency %v or BreakWatchEvery %d, or unknown Ops %#x",
			store.ErrInvalid, r.MaxLatency, r.BreakWatchEvery, uint16(r.Ops))
	}
	return nil
}

// draw decides c's fault with rng.
func (r Rates) draw(rng *rand.Rand, c Call) Decision {
	ops := r.Ops
	if ops == 0 {
		ops = OpAll
	}
	var d Decision
	if c.Op&ops == 0 {
		return d
	}
	if r.MaxLatency > 0 {
		d.Delay = time.Duration(rng.Int64N(int64(r.MaxLatency) + 1))
	}
	if r.Error+r.Conflict+r.Lost > 0 {
		p := rng.Float64()
		switch {
		case p < r.Error:
			d.Fault = Fail
		case p < r.Error+r.Conflict && c.Op&(OpUpdate|OpDelete) != 0:
			d.Fault = Conflict
		case p >= r.Error+r.Conflict && p < r.Error+r.Conflict+r.Lost && c.Op&OpWrites != 0:
			d.Fault = Lose
		}
	}
	if n := r.BreakWatchEvery; n > 0 && c.Op == OpWatch && d.Fault == None {
		d.Fault, d.BreakAfter = Break, n/2+rng.IntN(n+1)
	}
	return d
}
