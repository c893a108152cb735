package checkpointtest

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/checkpoint"
	"github.com/converge-go/converge/store/storetest"
)

// Backend is a store the suite stops and serves again, from its own data,
// from a copy of it, or afresh, as an operator restores a store's file or
// data directory. Store is what the controller uses throughout: while the
// backend is stopped its calls fail (or do not answer), and once it serves
// again they reach whatever it serves.
type Backend interface {
	// Store returns the store the controller and the suite use.
	Store() store.Store[*storetest.Value]
	// Stop stops serving.
	Stop(t *testing.T)
	// Start serves again, stopped, the data it had when it stopped.
	Start(t *testing.T)
	// Copy returns, stopped, a function that serves, stopped, a copy of
	// the data it has now instead (its identity, its revision, its
	// objects at their revisions).
	Copy(t *testing.T) (startFrom func(t *testing.T))
	// StartFresh serves, stopped, a new empty store of another identity.
	StartFresh(t *testing.T)
}

// Options adjust the suite to a backend.
type Options struct {
	// Bubble runs each case in a testing/synctest bubble (a backend in
	// memory): its waits are then on the fake clock.
	Bubble bool
	// Heartbeat is the controller's Options.HeartbeatInterval (default
	// 100 ms; its checkpoint's StartAfter is three of them).
	Heartbeat time.Duration
}

// Run runs every case of the suite against backends made by open (a new
// one for each case): a controller started, its store stopped, from a
// checkpoint, while the store is rolled back to an older copy under the
// same identity (to a copy with keys, to an empty one), rolled forward,
// emptied or replaced by another identity, and with a checkpoint seen in
// the past, at its maximum age, past it, or in the future. In each, once
// the store serves again:
//
//   - every key the store holds is reconciled from the store's value;
//   - every key the checkpoint held (and the controller reconciled) that
//     the store lacks is reconciled as deleted, with its last value;
//   - a refused checkpoint's keys are never reconciled;
//   - writes made later are reconciled;
//   - Health says it: synced, no longer from the checkpoint, another
//     history (Health.History) exactly when the store was rolled back or
//     replaced, why a checkpoint was refused (Health.Checkpoint.Refused);
//     and the checkpoint is rewritten to the store's state.
//
// The suite runs in real time unless Options.Bubble is set; it never
// sleeps except to poll Health, and asserts no durations.
func Run(t *testing.T, open func(t *testing.T) Backend, opts Options) {
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 100 * time.Millisecond
	}
	for _, sc := range storeCases {
		t.Run(sc.name+"/"+seenInThePast.name, func(t *testing.T) {
			runCase(t, open, opts, sc, seenInThePast)
		})
	}
	for _, sc := range storeCases[:2] {
		for _, tc := range startCases {
			t.Run(sc.name+"/"+tc.name, func(t *testing.T) {
				runCase(t, open, opts, sc, tc)
			})
		}
	}
}

// runCase runs one case, in a bubble if asked.
func runCase(t *testing.T, open func(t *testing.T) Backend, opts Options, sc storeCase, tc startCase) {
	if opts.Bubble {
		synctest.Test(t, func(t *testing.T) { (&run{opts: opts, sc: sc, tc: tc}).do(t, open(t)) })
		return
	}
	(&run{opts: opts, sc: sc, tc: tc}).do(t, open(t))
}

// run is one case.
type run struct {
	opts Options
	sc   storeCase
	tc   startCase
	b    Backend
	s    store.Store[*storetest.Value]
	ctl  *reconcile.Controller[*storetest.Value]
	rec  *recorder
	cp   *Memory[*storetest.Value]
	// held is the checkpoint the controller starts from, or (listed) the
	// state of the store it listed when the store stopped.
	held checkpoint.State[*storetest.Value]
}

// do makes the store's history, starts the controller from a checkpoint
// while the store is stopped, serves the store as the case says, writes
// more, and checks.
func (r *run) do(t *testing.T, b Backend) {
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	r.b, r.s = b, b.Store()
	identity := identityOf(ctx, t, r.s)
	copies := map[string]func(t *testing.T){}
	copyNow := func(name string) {
		b.Stop(t)
		copies[name] = b.Copy(t)
		b.Start(t)
	}
	copyNow("empty")
	apply(ctx, t, r.s, toEarly)
	copyNow("early")
	apply(ctx, t, r.s, toCheckpoint)
	r.held = stateOf(ctx, t, r.s, identity, r.tc.seen(time.Now(), r.tc.maxAge))
	if r.tc.listed {
		r.startController(ctx, t)
		if rev := apply(ctx, t, r.s, r.sc.after); rev > 0 {
			if err := r.ctl.WaitForRevision(ctx, rev); err != nil {
				t.Fatalf("WaitForRevision(%d): %v", rev, err)
			}
		}
		r.held = stateOf(ctx, t, r.s, identity, time.Now())
		b.Stop(t)
	} else {
		apply(ctx, t, r.s, r.sc.after)
		b.Stop(t)
		r.startController(ctx, t)
	}
	r.sc.serve(ctx, t, b, copies)
	if r.tc.listed && r.sc.history != "" {
		// Found by the controller itself (its watch may have stayed
		// open), not by the WaitForRevision below.
		eventually(ctx, t, "the controller never found its store to be another history", func() bool {
			return r.ctl.Health().History.Changes > 0
		})
	}
	if err := r.ctl.WaitForSync(ctx); err != nil {
		t.Fatalf("WaitForSync once the store serves: %v (health %+v)", err, r.ctl.Health())
	}
	rev := apply(ctx, t, r.s, later)
	if err := r.ctl.WaitForRevision(ctx, rev); err != nil {
		t.Fatalf("WaitForRevision(%d) of the later writes: %v", rev, err)
	}
	r.check(ctx, t)
}

// patience bounds every wait of a case.
const patience = time.Minute

// startController starts a controller of the stopped store from the
// checkpoint (listed: of the store, without one), and waits until it has
// reconciled the checkpoint's objects (or refused it).
func (r *run) startController(ctx context.Context, t *testing.T) {
	t.Helper()
	r.rec = newRecorder()
	opts := reconcile.Options[*storetest.Value]{Name: "checkpointtest", Workers: 2, HeartbeatInterval: r.opts.Heartbeat}
	if !r.tc.listed {
		r.cp = NewMemory(&r.held)
		opts.Checkpoint = checkpoint.Options[*storetest.Value]{Store: r.cp, MaxAge: r.tc.maxAge, Interval: r.opts.Heartbeat}
	}
	ctl, err := reconcile.New[*storetest.Value](r.s, r.rec, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r.ctl = ctl
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctl.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	if !r.tc.used {
		r.waitRefused(ctx, t)
		return
	}
	want := map[string]int{}
	for _, obj := range r.held.Objects {
		want[obj.Key] = obj.Value.N
	}
	if err := r.rec.waitFor(ctx, want); err != nil {
		t.Fatalf("the checkpoint's objects were not reconciled: %v (health %+v)", err, ctl.Health())
	}
	if h := ctl.Health(); !r.tc.listed && !h.Checkpoint.Active {
		t.Fatalf("Health does not say the controller runs from its checkpoint: %+v", h.Checkpoint)
	}
}
