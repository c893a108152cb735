package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
	"golang.org/x/time/rate"
)

// The round trip is one object's way through a reconciler as its writer
// sees it: over a table already holding Objects converged objects (the
// statedb workload's, inserted and reconciled first), the writer makes one
// object pending, then waits until it sees that object's status done
// through the implementation's own read path. Trials run one at a time,
// each on the next object (trial i on object i mod Objects), so the figure
// is latency, not throughput. Before the first trial each reconciler has
// taken in every change so far, its own status writes included (statedb's
// WaitUntilReconciled, converge's WaitForRevision, at the table's
// revision), so that no trial waits for the setup's tail.
//
// On statedb the write is one write transaction (get the object, insert a
// copy with a pending status) and the wait reads the object again each
// time its watch channel (Table.GetWatch) closes. On converge the write is
// a Get and an Update of the object as pending in the memory store and the
// wait is a store watch of the object's key from the revision of that
// Update; the controller is reconcile.New with default options, its status
// written through Request.Store.

// RoundTripOptions sizes one round-trip run.
type RoundTripOptions struct {
	// Objects is how many converged objects the table holds before the
	// trials (default 10,000).
	Objects int
	// Trials is how many round trips are measured (default 2,000).
	Trials int
	// CPUProfile, if set, names a file to which a CPU profile of the
	// trials (not of the setup) is written.
	CPUProfile string
}

func (o RoundTripOptions) withDefaults() RoundTripOptions {
	if o.Objects <= 0 {
		o.Objects = 10000
	}
	if o.Trials <= 0 {
		o.Trials = 2000
	}
	return o
}

// RoundTripResult is what one round-trip run measured: percentiles of the
// trials' times (Percentile's nearest rank), from the start of the write to the
// writer's sight of the status done.
type RoundTripResult struct {
	Name    string
	Objects int
	// Trials is how many round trips completed.
	Trials         int
	P50, P99, P999 time.Duration
	Max            time.Duration
}

// String formats r as one line of the round-trip table.
func (r RoundTripResult) String() string {
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	return fmt.Sprintf("%-16s %9d %7d %9.1fµs %9.1fµs %9.1fµs %9.1fµs",
		r.Name, r.Objects, r.Trials, us(r.P50), us(r.P99), us(r.P999), us(r.Max))
}

// RoundTripHeader names the columns of RoundTripResult.String.
const RoundTripHeader = "implementation     objects  trials       p50        p99       p999        max"

// RoundTripImpl is one implementation of the round trip.
type RoundTripImpl struct {
	Name string
	Run  func(o RoundTripOptions) (RoundTripResult, error)
}

// RoundTripImpls returns statedb's reconciler without its round limiter
// (reconciler.WithRoundLimits(1000, rate.NewLimiter(rate.Inf, 1)): rounds
// of up to 1,000 objects, none waited for), converge the idiomatic way,
// and statedb with its benchmark's limiter (rate.NewLimiter(1000, 10): a
// round waits for a token, 1,000 a second once a burst of 10 is spent).
func RoundTripImpls() []RoundTripImpl {
	statedbWith := func(name string, limiter func() *rate.Limiter) RoundTripImpl {
		return RoundTripImpl{Name: name, Run: func(o RoundTripOptions) (RoundTripResult, error) {
			return runStatedbRoundTrip(name, o.withDefaults(), limiter())
		}}
	}
	return []RoundTripImpl{
		statedbWith("statedb", func() *rate.Limiter { return rate.NewLimiter(rate.Inf, 1) }),
		{Name: "converge", Run: func(o RoundTripOptions) (RoundTripResult, error) {
			return runConvergeRoundTrip("converge", o.withDefaults())
		}},
		statedbWith("statedb-limiter", func() *rate.Limiter { return rate.NewLimiter(1000, 10) }),
	}
}

func runStatedbRoundTrip(name string, o RoundTripOptions, limiter *rate.Limiter) (RoundTripResult, error) {
	t, err := startStatedb(1000, limiter)
	if err != nil {
		return RoundTripResult{}, err
	}
	ctx := context.Background()
	if err := t.insertPending(ctx, o.Objects, 1000); err != nil {
		return RoundTripResult{}, t.stop(err, 0)
	}
	if err := t.settle(ctx); err != nil {
		return RoundTripResult{}, t.stop(err, 0)
	}
	res, err := measureRoundTrip(name, o, func(id uint64) error {
		if err := t.markPending(id); err != nil {
			return err
		}
		return t.waitDone(ctx, id)
	})
	return res, t.stop(err, int64(o.Objects+o.Trials))
}

func runConvergeRoundTrip(name string, o RoundTripOptions) (RoundTripResult, error) {
	s := store.NewMemory[*Item]()
	defer s.Close()
	rec := &itemReconciler{all: make(chan struct{}), want: int64(o.Objects)}
	c, err := startItems(s, rec, reconcile.Options[*Item]{Name: "roundtrip"})
	if err != nil {
		return RoundTripResult{}, err
	}
	ctx := context.Background()
	if err := insertItems(ctx, s, SideOptions{Objects: o.Objects}.withDefaults()); err != nil {
		return RoundTripResult{}, fmt.Errorf("%w (stop: %v)", err, c.stop())
	}
	select {
	case <-rec.all:
	case err := <-c.runErr:
		c.cancel()
		return RoundTripResult{}, fmt.Errorf("controller stopped before converging: %v", err)
	}
	if err := settle(ctx, s, c.Controller); err != nil {
		return RoundTripResult{}, fmt.Errorf("%w (stop: %v)", err, c.stop())
	}
	res, err := measureRoundTrip(name, o, func(id uint64) error {
		return markPendingAndWatch(ctx, s, id)
	})
	if n := rec.updates.Load(); err == nil && n < int64(o.Objects+o.Trials) {
		err = fmt.Errorf("converge: %d updates, want at least %d", n, o.Objects+o.Trials)
	}
	if e := c.stop(); err == nil {
		err = e
	}
	return res, err
}

// settle returns once c has taken in every change of s so far, its own
// status writes included.
func settle(ctx context.Context, s *store.Memory[*Item], c *reconcile.Controller[*Item]) error {
	rev, err := s.Revision(ctx)
	if err != nil {
		return err
	}
	return c.WaitForRevision(ctx, rev)
}

// markPendingAndWatch makes object id pending (Get, then Update on the
// revision read) and returns once a watch of its key from the revision of
// that Update delivers the object with its status done.
func markPendingAndWatch(ctx context.Context, s *store.Memory[*Item], id uint64) error {
	key := itemKey(id)
	cur, err := s.Get(ctx, key)
	if err != nil {
		return err
	}
	obj, err := s.Update(ctx, key, &Item{ID: id, Status: ItemStatus{Kind: ItemPending}}, cur.Revision)
	if err != nil {
		return err
	}
	w, err := s.Watch(ctx, key, obj.Revision)
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.Events() {
		// The key is also the prefix of longer keys: obj/1 of obj/10.
		if ev.Object.Key == key && ev.Type != store.Deleted && ev.Object.Value.Status.Kind == ItemDone {
			return nil
		}
	}
	return fmt.Errorf("converge: the watch of %s ended before its status was done: %w", key, w.Err())
}

// measureRoundTrip runs o.Trials trials one after the other, trial i on
// object i mod o.Objects, after a GC so that the setup's garbage is not
// collected during them, and returns their percentiles.
func measureRoundTrip(name string, o RoundTripOptions, trial func(id uint64) error) (RoundTripResult, error) {
	res := RoundTripResult{Name: name, Objects: o.Objects}
	runtime.GC()
	if o.CPUProfile != "" {
		f, err := os.Create(o.CPUProfile)
		if err != nil {
			return res, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return res, err
		}
		defer pprof.StopCPUProfile()
	}
	times := make([]time.Duration, 0, o.Trials)
	for i := range o.Trials {
		start := time.Now()
		if err := trial(uint64(i % o.Objects)); err != nil {
			return res, fmt.Errorf("trial %d: %w", i, err)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	res.Trials = len(times)
	res.P50, res.P99, res.P999 = Percentile(times, 0.5), Percentile(times, 0.99), Percentile(times, 0.999)
	res.Max = times[len(times)-1]
	return res, nil
}
