package robustness_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// The objects of the store server's controller tests: a spec the users
// write, and the status the controller writes once it has applied it.
type (
	seqSpec struct {
		Seq int `json:"seq"`
	}
	seqStatus struct {
		Applied int `json:"applied"`
	}
	seqObject = resource.Resource[seqSpec, seqStatus]
)

const (
	worldPrefix      = "app/"
	cleanupFinalizer = "robustness/cleanup"
)

// world is the external system the controller converges: one number per
// key, set by the reconciler to the key's spec and removed by its cleanup
// (resource.Finalize) once the key's object is marked for deletion.
type world struct {
	mu       sync.Mutex
	seq      map[string]int
	cleanups map[string]int
}

func newWorld() *world { return &world{seq: map[string]int{}, cleanups: map[string]int{}} }

// Reconcile makes sure the object carries the cleanup finalizer before
// acting, then sets the key's number and records it in the status; a
// marked object's number is removed, then its finalizer, which removes the
// object.
func (w *world) Reconcile(ctx context.Context, req reconcile.Request[*seqObject]) (reconcile.Result, error) {
	obj, deleting, err := resource.Finalize(ctx, req, cleanupFinalizer, func(context.Context) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.seq, req.Key)
		w.cleanups[req.Key]++
		return nil
	})
	if deleting || err != nil {
		return reconcile.Result{}, err
	}
	w.mu.Lock()
	w.seq[req.Key] = obj.Value.Spec.Seq
	w.mu.Unlock()
	_, err = resource.WriteStatus(ctx, req.Store, obj, seqStatus{Applied: obj.Value.Spec.Seq})
	return reconcile.Result{}, err
}

// snapshot returns the numbers and the cleanups made so far.
func (w *world) snapshot() (seq, cleanups map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.seq), maps.Clone(w.cleanups)
}

// runWorldController runs a controller of w over s until the returned stop
// is called (or t ends), and returns it. stop returns Run's error.
func runWorldController(t *testing.T, s store.Store[*seqObject], w *world) (*reconcile.Controller[*seqObject], func() error) {
	t.Helper()
	c, err := reconcile.New[*seqObject](s, w, reconcile.Options[*seqObject]{
		Name:              "world",
		Prefix:            worldPrefix,
		Workers:           4,
		RateLimiter:       queue.NewExponential[string](5*time.Millisecond, 200*time.Millisecond, 0.2),
		HeartbeatInterval: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			runErr = <-done
		})
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return c, stop
}

// userClient writes specs through a client of the store server, as a user
// with convergectl does, riding out kills of the server: a call that fails
// with store.ErrUnavailable waits until the server serves again, and a
// write whose answer was lost is judged by reading the key then (each key
// has one user, and the server that could have made the write is dead).
type userClient struct {
	s   store.Store[*seqObject]
	srv *storeServer
	// lost counts, if set, the writes whose answer was lost.
	lost *atomic.Int64
}

func (u userClient) lostAnswer() {
	if u.lost != nil {
		u.lost.Add(1)
	}
}

// get reads key, after any kill; ok is false if it does not exist.
func (u userClient) get(ctx context.Context, key string) (obj store.Object[*seqObject], ok bool, err error) {
	for {
		obj, err = u.s.Get(ctx, key)
		switch {
		case err == nil:
			return obj, true, nil
		case errors.Is(err, store.ErrNotFound):
			return obj, false, nil
		case !errors.Is(err, store.ErrUnavailable):
			return obj, false, err
		}
		if err := u.srv.waitUp(ctx); err != nil {
			return obj, false, err
		}
	}
}

// put makes key's spec n, creating the object if need be, and returns
// once the store holds it.
func (u userClient) put(ctx context.Context, key string, n int) error {
	for {
		_, err := resource.PutSpec(ctx, u.s, key, seqSpec{Seq: n})
		if !errors.Is(err, store.ErrUnavailable) {
			return err
		}
		u.lostAnswer()
		if err := u.srv.waitUp(ctx); err != nil {
			return err
		}
		obj, ok, err := u.get(ctx, key)
		if err != nil || (ok && obj.Value.Spec.Seq == n) {
			return err // the write whose answer was lost was made
		}
	}
}

// remove deletes key's object and returns once it is marked (or gone).
// marked reports that the delete is known to have marked the object: it
// carried the cleanup finalizer, so its cleanup must run. (An object
// deleted before the controller added the finalizer goes at once; so may
// seem one whose delete's answer was lost, if its cleanup was done by the
// time it is read again.)
func (u userClient) remove(ctx context.Context, key string) (marked bool, err error) {
	for {
		obj, ok, err := u.get(ctx, key)
		if err != nil || !ok || obj.Value.Deleting() {
			return ok && obj.Value.Deleting(), err
		}
		_, err = u.s.Delete(ctx, key, obj.Revision)
		switch {
		case err == nil:
			return obj.Value.HasFinalizer(cleanupFinalizer), nil
		case errors.Is(err, store.ErrNotFound):
			return false, nil
		case errors.Is(err, store.ErrUnavailable):
			u.lostAnswer()
			if err := u.srv.waitUp(ctx); err != nil {
				return false, err
			}
		case !errors.Is(err, store.ErrConflict):
			return false, err
		}
	}
}

// waitGone waits until key's object is gone, for at most procPatience.
func (u userClient) waitGone(ctx context.Context, key string) error {
	err := poll(ctx, func() bool {
		_, ok, err := u.get(ctx, key)
		return err == nil && !ok
	})
	if err != nil {
		return fmt.Errorf("%s still in the store: %w", key, err)
	}
	return nil
}

// checkWorldConverged waits until c has reconciled everything up to the store's
// revision and then checks that the store and the world hold want: each
// key's spec, its status saying it was applied at its generation, every
// other key of the prefix absent from both (a marked object's cleanup done
// and the object gone).
func checkWorldConverged(t *testing.T, c *reconcile.Controller[*seqObject], u userClient, w *world, want map[string]int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), procPatience)
	defer cancel()
	if err := u.srv.waitUp(ctx); err != nil {
		t.Fatal(err)
	}
	rev, err := u.s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForRevision(ctx, rev); err != nil {
		t.Fatalf("the controller did not reconcile up to revision %d: %v (health %+v)", rev, err, c.Health())
	}
	// What the controller wrote since (finalizers added, and removed,
	// which removes marked objects) is its own reconciles' doing.
	objs, _, err := u.s.List(ctx, worldPrefix)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]int{}
	for _, obj := range objs {
		v := obj.Value
		if v.Deleting() {
			t.Errorf("%s still marked for deletion after the reconciles up to revision %d", obj.Key, rev)
		}
		if v.Status.Applied != v.Spec.Seq || v.ObservedGeneration != v.Generation {
			t.Errorf("%s: status %+v at observed generation %d; want spec %d applied at generation %d", obj.Key, v.Status, v.ObservedGeneration, v.Spec.Seq, v.Generation)
		}
		stored[obj.Key] = v.Spec.Seq
	}
	seq, _ := w.snapshot()
	if !maps.Equal(stored, want) {
		t.Errorf("the store holds %v; want the last acknowledged writes %v", stored, want)
	}
	if !maps.Equal(seq, want) {
		t.Errorf("the world holds %v; want the last acknowledged writes %v", seq, want)
	}
}
