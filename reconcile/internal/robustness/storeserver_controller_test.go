package robustness_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// The shape of the controller's run over a store server killed under load.
const (
	worldKeys  = 8
	worldSteps = 40 // per key: a spec write, or a delete waited through
	worldKills = 4
)

// TestAControllerOverAKilledStoreServerConvergesToEveryAcknowledgedWrite
// runs a controller in this process against convergestore, a separate
// process, through httpstore's client, while users (a client of their
// own per key) write specs and delete objects, and the server is killed
// with SIGKILL and restarted on the same directory and port, worldKills
// times as the writes progress. The controller's reconciler acts on a
// world of its own and cleans up (resource.Finalize) when an object is
// deleted; each delete is waited through until the object is gone. A
// write whose answer a kill lost is judged by reading the key once the
// server serves again. Afterwards the store holds every key's last
// acknowledged write, nothing lost, and the world equals it: the
// controller converged to every acknowledged write, deletes included.
func TestAControllerOverAKilledStoreServerConvergesToEveryAcknowledgedWrite(t *testing.T) {
	srv := startStoreServer(t)
	w := newWorld()
	c, _ := runWorldController(t, storeClient[*seqObject](t, srv), w)
	// A kill that fails ends the writers, who would wait for the server.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	var (
		acks    atomic.Int64
		lost    atomic.Int64
		wg      sync.WaitGroup
		mu      sync.Mutex
		want    = map[string]int{}
		marked  = map[string]int{} // deletes known to have marked the object
		deletes atomic.Int64
		errs    = make(chan error, worldKeys+1)
	)
	kills := 0
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		for i := range worldKills {
			if err := poll(ctx, func() bool { return acks.Load() >= int64((i+1)*worldKeys*worldSteps/(worldKills+1)) }); err != nil {
				errs <- fmt.Errorf("kill %d: the writes did not progress: %w", i+1, err)
				cancel()
				return
			}
			if err := srv.Restart(); err != nil {
				errs <- fmt.Errorf("kill %d: %w", i+1, err)
				cancel()
				return
			}
			kills++
		}
	}()
	for k := range worldKeys {
		key := fmt.Sprintf("%s%d", worldPrefix, k)
		u := userClient{s: storeClient[*seqObject](t, srv), srv: srv, lost: &lost}
		rng := rand.New(rand.NewPCG(uint64(k), 1))
		wg.Go(func() {
			last, marks, err := writeKey(ctx, u, key, rng, &acks, &deletes)
			if err != nil {
				errs <- fmt.Errorf("%s: %w", key, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if last > 0 {
				want[key] = last
			}
			marked[key] = marks
		})
	}
	wg.Wait()
	<-killed
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d acknowledged writes and %d deletes waited through across %d kills of the store server (%d runs); %d writes' answers lost (a call refused while the server was down included), judged by reading the key",
		acks.Load(), deletes.Load(), kills, srv.runs, lost.Load())
	if kills != worldKills {
		t.Fatalf("%d kills made; want %d", kills, worldKills)
	}
	checkWorldConverged(t, c, userClient{s: storeClient[*seqObject](t, srv), srv: srv}, w, want)
	_, cleanups := w.snapshot()
	for key, n := range marked {
		if cleanups[key] < n {
			t.Errorf("%s: %d cleanups ran for %d deletes that marked it", key, cleanups[key], n)
		}
	}
}

// writeKey is one user's writes to key: worldSteps steps, each a write of
// the next spec (creating the object if it is gone) or, one in six while
// the object exists, a delete waited through until the object is gone. It
// returns the spec the last step left (0: deleted) and how many deletes
// are known to have marked the object (userClient.remove).
func writeKey(ctx context.Context, u userClient, key string, rng *rand.Rand, acks, deletes *atomic.Int64) (last, marks int, err error) {
	for n := 1; n <= worldSteps; n++ {
		if last > 0 && rng.IntN(6) == 0 {
			marked, err := u.remove(ctx, key)
			if err != nil {
				return 0, 0, err
			}
			if err := u.waitGone(ctx, key); err != nil {
				return 0, 0, err
			}
			if marked {
				marks++
			}
			last = 0
			deletes.Add(1)
		} else {
			if err := u.put(ctx, key, n); err != nil {
				return 0, 0, err
			}
			last = n
		}
		acks.Add(1)
	}
	return last, marks, nil
}

// TestEditsMadeThroughTheStoreServerWhileNoControllerRunsAreReconciledWhenOneStarts:
// a controller reconciles objects through convergestore and stops; while
// none runs, a user changes two specs, creates an object and deletes one
// whose finalizer the controller had added (it is only marked, and stays
// readable), and the server is killed and restarted. A new controller
// then converges the changed specs and the new object, runs the deleted
// object's cleanup, after which the object is gone, and leaves the
// unchanged object as it was.
func TestEditsMadeThroughTheStoreServerWhileNoControllerRunsAreReconciledWhenOneStarts(t *testing.T) {
	srv := startStoreServer(t)
	ctx := t.Context()
	u := userClient{s: storeClient[*seqObject](t, srv), srv: srv}
	w := newWorld()
	c, stop := runWorldController(t, storeClient[*seqObject](t, srv), w)
	for k := range 4 {
		if err := u.put(ctx, fmt.Sprintf("%s%d", worldPrefix, k), 1); err != nil {
			t.Fatal(err)
		}
	}
	checkWorldConverged(t, c, u, w, map[string]int{"app/0": 1, "app/1": 1, "app/2": 1, "app/3": 1})
	if err := stop(); err != nil {
		t.Fatalf("stopping the controller: %v", err)
	}

	for key, n := range map[string]int{"app/0": 2, "app/1": 5, "app/4": 1} {
		if err := u.put(ctx, key, n); err != nil {
			t.Fatal(err)
		}
	}
	if marked, err := u.remove(ctx, "app/2"); err != nil || !marked {
		t.Fatalf("deleting app/2: marked %v, %v; want it marked", marked, err)
	}
	marked, ok, err := u.get(ctx, "app/2")
	if err != nil || !ok || !marked.Value.Deleting() || !marked.Value.HasFinalizer(cleanupFinalizer) {
		t.Fatalf("app/2 deleted with no controller running: %+v (exists %v, %v); want it marked, with its finalizer", marked.Value, ok, err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if seq, cleanups := w.snapshot(); seq["app/2"] != 1 || cleanups["app/2"] != 0 {
		t.Fatalf("app/2 was cleaned up with no controller running: world %v, cleanups %v", seq, cleanups)
	}

	c2, _ := runWorldController(t, storeClient[*seqObject](t, srv), w)
	checkWorldConverged(t, c2, u, w, map[string]int{"app/0": 2, "app/1": 5, "app/3": 1, "app/4": 1})
	if _, cleanups := w.snapshot(); cleanups["app/2"] < 1 {
		t.Errorf("app/2 is gone but its cleanup never ran: %v", cleanups)
	}
	obj, _, err := u.get(ctx, "app/4")
	if err != nil || !obj.Value.HasFinalizer(cleanupFinalizer) || obj.Value.Generation != 1 {
		t.Errorf("app/4, created while no controller ran: %+v (%v); want generation 1 and the finalizer added", obj.Value, err)
	}
	if obj, _, _ := u.get(ctx, "app/1"); obj.Value == nil || obj.Value.Generation != 2 {
		t.Errorf("app/1 after one spec change: %+v; want generation 2", obj.Value)
	}
}
