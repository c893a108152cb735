package robustness_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/converge-go/converge/store/etcdstore/etcdprocs"
	"github.com/stretchr/testify/require"
)

// TestChaosConvergesOnAnEtcdProcessCluster runs the chaos test of
// TestChaosConvergesOnEveryBackend, with its checks unchanged, over an
// etcdstore whose client has the three endpoints of a cluster of separate
// etcd server processes on loopback. During the run, besides the chaos
// test's own faults, the cluster's leader is killed (SIGKILL) and later
// restarted, then the leader and a follower are killed together (the
// quorum is lost: a linearizable read fails) and both restarted. The
// controller's watch is open across each kill, and each kill waits until one
// of its store calls is under way.
//
// The test's own writers (the user, the foreign writer, the test's reads)
// are held back from a moment before each kill until the cluster serves
// again: a write cut off by a kill has an unknown outcome, and the
// checks need the exact history of desired states. One seed by default,
// CONVERGE_CHAOS_SEEDS for more; skipped with -short.
func TestChaosConvergesOnAnEtcdProcessCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of etcd processes")
	}
	seeds := chaosSeeds()
	if os.Getenv(chaosSeedsEnv) == "" {
		seeds = seeds[:1]
	}
	// Named etcd: runChaos then also requires multi-key transactions.
	b := chaosBackend{name: "etcd", heartbeat: time.Second, open: openProcsChaos}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runChaos(t, b, seed) })
	}
}

// procsFaultEvery is how many writes by the test's writers come between
// two steps of the process faults.
const procsFaultEvery = 60

// openProcsChaos starts a 3-process cluster and returns its store, gated
// for the test's own calls, and a gated transaction writer; a goroutine
// kills and restarts members as the writers progress (the chaos test's
// writers go on until it is done: ownFaults). The cleanup checks that
// every fault was injected.
func openProcsChaos(t *testing.T, _ int) (chaosStore, foreignWriter) {
	cl := startProcCluster(t, 3)
	client, err := etcdprocs.Client(cl.Endpoints()...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	s, err := etcdstore.New[*replicaSet](client, chaosPrefix)
	require.NoError(t, err)
	g := &gatedStore{chaosStore: s, test: t.Context()}
	f := &procFaults{t: t, c: cl, g: g, done: make(chan struct{})}
	g.injected = f.done
	go f.run()
	t.Cleanup(f.check)
	return g, gatedWriter{w: etcdTxnWriter{client: client, prefix: chaosPrefix}, g: g}
}

// gatedStore passes calls to its store; calls made with the test's own
// context (the writers', the test's reads) wait while the gate is closed,
// and its writes are counted. The controller's calls, made with other
// contexts, pass at any time.
type gatedStore struct {
	chaosStore
	test   context.Context
	gate   sync.RWMutex // held for writing while members are killed
	writes atomic.Int64
	failed atomic.Int64 // calls by the controller that failed
	flying atomic.Int64 // calls by the controller under way
	// injected is closed when the process faults are all injected, or
	// given up (procFaults.done).
	injected <-chan struct{}
}

// Injected is closed once the process faults are all injected, or given
// up (ownFaults).
func (g *gatedStore) Injected() <-chan struct{} { return g.injected }

func (g *gatedStore) enter(ctx context.Context) func() {
	if ctx != g.test {
		g.flying.Add(1)
		return func() { g.flying.Add(-1) }
	}
	g.gate.RLock()
	return g.gate.RUnlock
}

// counted counts a write of the test's that succeeded, or a failed call
// of the controller's.
func (g *gatedStore) counted(ctx context.Context, err error) {
	if ctx == g.test && err == nil {
		g.writes.Add(1)
	}
	g.countFailure(ctx, err)
}

// countFailure counts a call of the controller's that failed for another
// reason than the store's answer (not found, exists, conflict, guard).
func (g *gatedStore) countFailure(ctx context.Context, err error) {
	if ctx == g.test || err == nil {
		return
	}
	for _, answer := range []error{store.ErrNotFound, store.ErrExists, store.ErrConflict, store.ErrGuardFailed} {
		if errors.Is(err, answer) {
			return
		}
	}
	g.failed.Add(1)
}

// Codec returns the store's codec (store.Encoded).
func (g *gatedStore) Codec() store.Codec[*replicaSet] {
	return g.chaosStore.(store.Encoded[*replicaSet]).Codec()
}

// Identity returns the store's identity (store.Identifier): the
// controller checks it at each list and before it resumes a watch, across
// the kills too.
func (g *gatedStore) Identity(ctx context.Context) (string, error) {
	defer g.enter(ctx)()
	id, err := g.chaosStore.(store.Identifier).Identity(ctx)
	g.countFailure(ctx, err)
	return id, err
}

func (g *gatedStore) Get(ctx context.Context, key string) (store.Object[*replicaSet], error) {
	defer g.enter(ctx)()
	obj, err := g.chaosStore.Get(ctx, key)
	g.countFailure(ctx, err)
	return obj, err
}

func (g *gatedStore) List(ctx context.Context, prefix string) ([]store.Object[*replicaSet], int64, error) {
	defer g.enter(ctx)()
	objs, rev, err := g.chaosStore.List(ctx, prefix)
	g.countFailure(ctx, err)
	return objs, rev, err
}

func (g *gatedStore) Create(ctx context.Context, key string, v *replicaSet, guards ...store.Guard) (store.Object[*replicaSet], error) {
	defer g.enter(ctx)()
	obj, err := g.chaosStore.Create(ctx, key, v, guards...)
	g.counted(ctx, err)
	return obj, err
}

func (g *gatedStore) Update(ctx context.Context, key string, v *replicaSet, rev int64, guards ...store.Guard) (store.Object[*replicaSet], error) {
	defer g.enter(ctx)()
	obj, err := g.chaosStore.Update(ctx, key, v, rev, guards...)
	g.counted(ctx, err)
	return obj, err
}

func (g *gatedStore) Delete(ctx context.Context, key string, rev int64, guards ...store.Guard) (int64, error) {
	defer g.enter(ctx)()
	r, err := g.chaosStore.Delete(ctx, key, rev, guards...)
	g.counted(ctx, err)
	return r, err
}

func (g *gatedStore) Revision(ctx context.Context) (int64, error) {
	defer g.enter(ctx)()
	rev, err := g.chaosStore.Revision(ctx)
	g.countFailure(ctx, err)
	return rev, err
}

func (g *gatedStore) Compact(ctx context.Context, rev int64) error {
	defer g.enter(ctx)()
	return g.chaosStore.Compact(ctx, rev)
}

// gatedWriter is a foreign writer that waits while the gate is closed and
// counts its writes.
type gatedWriter struct {
	w foreignWriter
	g *gatedStore
}

func (w gatedWriter) apply(ctx context.Context, changes []change, l *ledger) (int, error) {
	defer w.g.enter(ctx)()
	n, err := w.w.apply(ctx, changes, l)
	if ctx == w.g.test {
		w.g.writes.Add(int64(n))
	}
	return n, err
}

// procFaults kills and restarts members of a process cluster as the test's
// writers progress.
type procFaults struct {
	t    *testing.T
	c    *etcdprocs.Cluster
	g    *gatedStore
	done chan struct{}
	err  error // set before done is closed
	step string
	cut  int // kills made while a call of the controller's was under way
}

// run kills the leader, restarts it, then kills the leader and a follower
// (the quorum) and restarts both, each step procsFaultEvery writes after
// the last.
func (f *procFaults) run() {
	defer close(f.done)
	ctx := f.t.Context()
	var next int64 = procsFaultEvery
	afterWrites := func(step string) bool {
		f.step = "waiting for writes before: " + step
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for f.g.writes.Load() < next {
			select {
			case <-ctx.Done():
				return false
			case <-tick.C:
			}
		}
		next = f.g.writes.Load() + procsFaultEvery
		f.step = step
		return true
	}
	// closed runs fn with the gate closed.
	closed := func(fn func() error) error {
		f.g.gate.Lock()
		defer f.g.gate.Unlock()
		return fn()
	}
	fail := func(err error) { f.err = fmt.Errorf("%s: %w", f.step, err) }
	// busy runs fn with the gate closed at a moment a call of the
	// controller's is under way, so that a kill in fn cuts requests off:
	// it closes the gate, and opens it again for the writers to go on
	// (and the controller to follow them) while no call is under way.
	busy := func(fn func() error) error {
		deadline := time.Now().Add(procPatience)
		tick := time.NewTicker(100 * time.Microsecond)
		defer tick.Stop()
		for {
			f.g.gate.Lock()
			if f.g.flying.Load() > 0 {
				f.cut++
				defer f.g.gate.Unlock()
				return fn()
			}
			f.g.gate.Unlock()
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("no call of the controller's under way within %v", procPatience)
			}
			<-tick.C
		}
	}

	// The 200 objects written before the run count as writes too.
	next += 200
	if !afterWrites("kill the leader") {
		return
	}
	leader, err := f.c.Leader(ctx, procPatience)
	if err != nil {
		fail(err)
		return
	}
	if err := busy(func() error {
		if err := f.c.Kill(leader); err != nil {
			return err
		}
		var rest []int
		for i := range f.c.Size() {
			if i != leader {
				rest = append(rest, i)
			}
		}
		return f.c.WaitServing(ctx, procPatience, f.c.Endpoints(rest...)...)
	}); err != nil {
		fail(err)
		return
	}
	if !afterWrites("restart the killed leader") {
		return
	}
	if err := closed(func() error {
		if err := f.c.Start(leader); err != nil {
			return err
		}
		return f.c.WaitServing(ctx, procPatience, f.c.Endpoints()...)
	}); err != nil {
		fail(err)
		return
	}
	if !afterWrites("kill the quorum") {
		return
	}
	if leader, err = f.c.Leader(ctx, procPatience); err != nil {
		fail(err)
		return
	}
	if err := busy(func() error {
		follower := (leader + 1) % f.c.Size()
		survivor := (leader + 2) % f.c.Size()
		for _, i := range []int{leader, follower} {
			if err := f.c.Kill(i); err != nil {
				return err
			}
		}
		ok, err := f.c.Readable(ctx, 500*time.Millisecond, f.c.Endpoints(survivor)...)
		switch {
		case err != nil:
			return err
		case ok:
			return fmt.Errorf("a linearizable read succeeded on %s with two of three members killed", f.c.Endpoints(survivor)[0])
		}
		for _, i := range []int{leader, follower} {
			if err := f.c.Start(i); err != nil {
				return err
			}
		}
		return f.c.WaitServing(ctx, procPatience, f.c.Endpoints()...)
	}); err != nil {
		fail(err)
		return
	}
	f.step = "done"
}

// check waits for run to end and fails the test if a fault went wrong or
// was never injected.
func (f *procFaults) check() {
	<-f.done
	switch {
	case f.err != nil:
		f.t.Errorf("process faults: %v", f.err)
	case f.step != "done" && !f.t.Failed():
		f.t.Errorf("process faults not all injected before the run ended; stopped at %q", f.step)
	default:
		f.t.Logf("process faults: leader killed and restarted, quorum killed and restarted (%d kills with a call of the controller's under way); %d of the controller's store calls failed (besides the fault store's)", f.cut, f.g.failed.Load())
	}
}
