package robustness

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
)

// Backend is a store under test: one factory function, and optionally a way
// to restart it.
type Backend struct {
	// Name names the backend in test names and messages.
	Name string
	// Open returns a new, empty store. It should register its cleanup with
	// t.Cleanup.
	Open func(t testing.TB) (store.Store[Value], error)
	// Restart, if not nil, closes s and opens the same data again, as a
	// process restart would, returning the new store (with its cleanup
	// registered). Record calls it once, halfway through the run, from a
	// client goroutine, while no call is in flight.
	Restart func(t testing.TB, s store.Store[Value]) (store.Store[Value], error)
	// Disrupt, if not nil, injects a fault into the backend that the store
	// must ride out, such as stopping the leader of a cluster. Record calls
	// it once, halfway through the run, from a client goroutine, while the
	// other clients keep calling: calls in flight and calls made until the
	// store recovers may fail with store.ErrUnavailable (ambiguous writes,
	// failed reads), and everything the store acknowledges must still be
	// linearizable and appear in the watch.
	Disrupt func(t testing.TB) error
	// Serve, if not nil, puts a transport between the clients and the
	// store, such as HTTP: Record passes it the store as the faults leave
	// it, decorated by o (Outcomes.Store), and the clients and the watcher
	// use the store Serve returns (a client of s served over HTTP). A
	// transport that loses an answer to a recorded write records in o
	// what it knows (Outcomes.NotApplied for a request it cut before it
	// was handled); the store side records the rest. Compaction is
	// checked by compacting s and watching through the returned store.
	Serve func(t testing.TB, s store.Store[Value], o *Outcomes) (store.Store[Value], error)
}

// Report is the outcome of Record.
type Report struct {
	Backend string
	Config  Config
	// Ops is the recorded history.
	Ops []Op
	// Watch is what the watcher received.
	Watch WatchLog
	// Start is the store's revision when the run began, before any
	// operation: 0 for a store that numbers its first write 1, as
	// store.Memory and boltstore do; etcd numbers a new cluster's first
	// write 2. The model starts there: the first write must take Start+1.
	Start int64
	// Revision is the store's revision after the last operation.
	Revision int64
	// Restarted reports whether the store was restarted during the run
	// (Backend.Restart returned a new store).
	Restarted bool
	// Disrupted reports whether Backend.Disrupt was called and returned
	// without error, and DisruptedAt when it returned, on the history's
	// clock (Op.Call).
	Disrupted   bool
	DisruptedAt int64
	// Store is the store after the run, for checks that need it (such as
	// CheckCompaction). It stays open until the test's cleanup.
	Store store.Store[Value]
}

// watchGrace bounds the wait, after the last operation, for the watcher to
// receive the last revision: a store that never delivers it fails the run
// instead of hanging it.
const watchGrace = time.Minute

// Record opens a store of backend b and runs cfg's workload on it: cfg.Clients
// concurrent clients, each a Recorder over NewFaults' fault store over the store, perform
// cfg.Ops operations in all on cfg.Keys keys, while a watcher watches
// KeyPrefix from the store's revision at the start, disconnecting and
// resuming as cfg says. If b can restart, the store is restarted halfway
// through; if b can be disrupted, it is disrupted there, without pausing
// the clients. Record returns once the watcher has received the store's
// final revision.
//
// It fails with ErrConfig for an invalid cfg or b, and with the store's
// error if the store cannot be opened, read, restarted, disrupted or
// watched.
func Record(ctx context.Context, t testing.TB, b Backend, cfg Config) (*Report, error) {
	r, err := openRig(ctx, t, b, cfg)
	if err != nil {
		return nil, err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	final := make(chan int64, 1)
	var (
		wlog    WatchLog
		watchEr error
		watched = make(chan struct{})
	)
	go func() {
		defer close(watched)
		wlog, watchEr = watchUntil(watchCtx, r.front, KeyPrefix, r.start, cfg.DisconnectEvery, final)
	}()

	mid := runClients(ctx, t, b, cfg, r.h, r.front, r.faults, r.rs)

	rev, revErr := r.rs.Revision(ctx)
	if revErr == nil {
		final <- rev
		grace := time.AfterFunc(watchGrace, stopWatch)
		defer grace.Stop()
	} else {
		stopWatch()
	}
	<-watched
	if err := errors.Join(mid.err, revErr, watchEr); err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name, err)
	}
	var after store.Store[Value] = r.rs
	if b.Serve != nil {
		after = r.front
	}
	ops := r.h.Ops()
	r.outcomes.fill(ops)
	return &Report{
		Backend:     b.Name,
		Config:      cfg,
		Ops:         ops,
		Watch:       wlog,
		Start:       r.start,
		Revision:    rev,
		Restarted:   mid.restarted,
		Disrupted:   mid.disrupted,
		DisruptedAt: mid.disruptedAt,
		Store:       after,
	}, nil
}

// rig is what a run records through: the history of the clients' calls,
// the store (restartable) and its faults, the revision it started at, and
// the front the clients and the watcher use (the store itself, or served
// with the outcomes of its calls recorded).
type rig struct {
	h        *History
	rs       *restartable
	faults   *Faults
	start    int64
	front    store.Store[Value]
	outcomes *Outcomes // nil unless served
}

// openRig checks cfg and b, opens b's store and puts the faults and the
// server, if any, in front of it.
func openRig(ctx context.Context, t testing.TB, b Backend, cfg Config) (*rig, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if b.Name == "" || b.Open == nil {
		return nil, fmt.Errorf("%w: a backend needs a Name and an Open function", ErrConfig)
	}
	h, err := NewHistory(Keys(cfg.Keys))
	if err != nil {
		return nil, err
	}
	base, err := b.Open(t)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", b.Name, err)
	}
	start, err := base.Revision(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: revision at the start: %w", b.Name, err)
	}
	rs := &restartable{cur: base}
	faults, err := NewFaults(rs, cfg.Seed, cfg.FailBeforeCommit, cfg.FailAfterCommit)
	if err != nil {
		return nil, err
	}
	r := &rig{h: h, rs: rs, faults: faults, start: start, front: faults}
	if b.Serve != nil {
		r.outcomes = NewOutcomes(h.now)
		served, err := b.Serve(t, r.outcomes.Store(faults), r.outcomes)
		if err != nil {
			return nil, fmt.Errorf("serve %s: %w", b.Name, err)
		}
		r.front = compactVia{served, rs}
	}
	return r, nil
}

// midway is what happened halfway through a run.
type midway struct {
	restarted, disrupted bool
	// disruptedAt is when the disruption ended, on the history's clock.
	disruptedAt int64
	// err is the restart's or the disruption's error, if any.
	err error
}

// runClients runs the clients to completion, restarting and disrupting the
// store halfway if the backend can, and returns what happened halfway.
func runClients(ctx context.Context, t testing.TB, b Backend, cfg Config, h *History, front store.Store[Value], faults *Faults, rs *restartable) midway {
	var (
		wg    sync.WaitGroup
		done  atomic.Int64
		mid   midway
		keys  = h.Keys()
		start = make(chan struct{})
	)
	halfway := func() {
		if b.Restart != nil {
			rs.restart(func(old store.Store[Value]) store.Store[Value] {
				s, err := b.Restart(t, old)
				if err != nil {
					mid.err = fmt.Errorf("restart: %w", err)
					return old
				}
				mid.restarted = true
				return s
			})
		}
		if b.Disrupt != nil {
			if err := b.Disrupt(t); err != nil {
				mid.err = errors.Join(mid.err, fmt.Errorf("disrupt: %w", err))
			} else {
				mid.disrupted = true
			}
			mid.disruptedAt = h.now()
		}
	}
	for i := range cfg.Clients {
		n := cfg.Ops / cfg.Clients
		if i < cfg.Ops%cfg.Clients {
			n++
		}
		c := newClient(i, h.Client(front), keys, cfg.Seed)
		wg.Go(func() {
			<-start
			for range n {
				c.step(ctx)
				// Let other clients in between operations, so that
				// even a store as fast as Memory sees them interleave.
				runtime.Gosched()
				switch n := done.Add(1); {
				case cfg.SilentOutage && n == int64(cfg.Ops/3):
					faults.SetOutage(faultstore.Silent)
				case n == int64(cfg.Ops/2):
					if cfg.SilentOutage {
						faults.SetOutage(faultstore.Up)
					}
					halfway()
				}
			}
		})
	}
	close(start)
	wg.Wait()
	return mid
}

// compactVia is the store the clients of a served backend use, whose
// Compact compacts the store behind the transport.
type compactVia struct {
	store.Store[Value]
	c Compactor
}

func (s compactVia) Compact(ctx context.Context, rev int64) error { return s.c.Compact(ctx, rev) }
