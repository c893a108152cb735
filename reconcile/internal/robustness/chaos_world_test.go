package robustness_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/reconcile/reconciletest"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// The chaos and soak tests reconcile replica sets: a spec asks for a number
// of pods, the world runs them, the status reports them.
type rsSpec struct {
	Replicas int `json:"replicas"`
}

type rsStatus struct {
	Ready int `json:"ready"`
}

type replicaSet = resource.Resource[rsSpec, rsStatus]

// write is one desired-state write: a spec (replicas) at a revision, or a
// deletion.
type write struct {
	rev      int64
	replicas int
	deleted  bool
}

// ledger keeps, per key, the write with the highest revision recorded.
type ledger struct {
	mu  sync.Mutex
	m   map[string]write
	log map[string][]string // every write, for failure messages
}

func newLedger() *ledger { return &ledger{m: map[string]write{}, log: map[string][]string{}} }

func (l *ledger) record(key string, w write) {
	l.note(key, fmt.Sprintf("write %+v", w))
	l.mu.Lock()
	defer l.mu.Unlock()
	if cur, ok := l.m[key]; !ok || w.rev > cur.rev {
		l.m[key] = w
	}
}

// note adds an entry to key's log.
func (l *ledger) note(key, entry string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log[key] = append(l.log[key], entry)
}

// history returns key's log.
func (l *ledger) history(key string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.log[key])
}

func (l *ledger) snapshot() map[string]write {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.m)
}

// errSkipped: a write found its key already as asked and wrote nothing.
var errSkipped = errors.New("nothing to write")

// writeSpec makes key ask for n replicas with one compare-and-swap write
// (bumping Generation, keeping the status), as a user's tool would, and
// returns the write; a key already asking for n is left alone (errSkipped).
// A lost race returns store.ErrConflict.
func writeSpec(ctx context.Context, s store.Store[*replicaSet], key string, n int) (write, error) {
	cur, err := s.Get(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		obj, err := s.Create(ctx, key, &replicaSet{Meta: apistore.Meta{Generation: 1}, Spec: rsSpec{Replicas: n}})
		if errors.Is(err, store.ErrExists) {
			err = fmt.Errorf("%w: %w", store.ErrConflict, err)
		}
		return write{rev: obj.Revision, replicas: n}, err
	case err != nil:
		return write{}, err
	case cur.Value.Spec.Replicas == n:
		return write{}, errSkipped
	}
	next := *cur.Value
	next.Conditions = slices.Clone(next.Conditions)
	next.Spec = rsSpec{Replicas: n}
	next.Generation++
	obj, err := s.Update(ctx, key, &next, cur.Revision)
	if errors.Is(err, store.ErrNotFound) { // deleted since the read
		err = fmt.Errorf("%w: %w", store.ErrConflict, err)
	}
	return write{rev: obj.Revision, replicas: n}, err
}

// deleteSpec deletes key if it exists (errSkipped if not).
func deleteSpec(ctx context.Context, s store.Store[*replicaSet], key string) (write, error) {
	cur, err := s.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return write{}, errSkipped
	}
	if err != nil {
		return write{}, err
	}
	rev, err := s.Delete(ctx, key, cur.Revision)
	if errors.Is(err, store.ErrNotFound) {
		err = fmt.Errorf("%w: %w", store.ErrConflict, err)
	}
	return write{rev: rev, deleted: true}, err
}

// chaosReconciler converges pods toward spec through a faulty store, with
// injected panics and hung calls, and records the revision of every object
// it reconciled successfully.
type chaosReconciler struct {
	store   store.Store[*replicaSet]
	world   *reconciletest.World
	chaotic reconcile.Reconciler[*replicaSet] // this one, with panics and hangs

	mu    sync.Mutex
	seen  map[string]int64 // highest revision reconciled successfully
	calls map[string]int   // reconciles started
	wrote map[string]int64 // the revision of each key's last status write
	stale int              // reconciles given an object older than their own last write
	notes *ledger          // if set, status writes are noted in its log
}

func newChaosReconciler(s store.Store[*replicaSet], w *reconciletest.World, seed uint64) *chaosReconciler {
	r := &chaosReconciler{store: s, world: w, seen: map[string]int64{}, calls: map[string]int{}, wrote: map[string]int64{}}
	r.chaotic = reconciletest.Chaotic(reconcile.ReconcilerFunc[*replicaSet](r.reconcile), seed, 0.01, 0.01)
	return r
}

// staleReads returns how many reconciles were given an object older than
// the status their controller had last written for the key.
func (r *chaosReconciler) staleReads() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stale
}

func (r *chaosReconciler) start(key string, rev int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rev < r.wrote[key] {
		r.stale++
	}
	r.calls[key]++
}

func (r *chaosReconciler) succeeded(key string, rev int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[key] = max(r.seen[key], rev)
}

// seenRev returns the highest revision of key reconciled successfully.
func (r *chaosReconciler) seenRev(key string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[key]
}

// Reconcile reconciles req, failing now and then as Chaotic makes it.
func (r *chaosReconciler) Reconcile(ctx context.Context, req reconcile.Request[*replicaSet]) (reconcile.Result, error) {
	r.start(req.Key, req.Object.Revision)
	return r.chaotic.Reconcile(ctx, req)
}

func (r *chaosReconciler) reconcile(ctx context.Context, req reconcile.Request[*replicaSet]) (res reconcile.Result, err error) {
	if r.notes != nil {
		defer func() {
			r.notes.note(req.Key, fmt.Sprintf("reconcile of revision %d (deleted %v, retries %d): %v", req.Object.Revision, req.Deleted, req.Retries, err))
		}()
	}
	if req.Deleted {
		r.world.Scale(req.Key, 0)
		r.succeeded(req.Key, req.Object.Revision)
		return reconcile.Result{}, nil
	}
	want := req.Object.Value.Spec.Replicas
	if r.world.Count(req.Key) != want {
		r.world.Scale(req.Key, want)
	}
	// Through the controller: fenced, and read back by the next reconcile.
	obj, err := resource.WriteStatus(ctx, req.Store, req.Object, rsStatus{Ready: want})
	if err != nil {
		return reconcile.Result{}, err
	}
	if obj.Revision != req.Object.Revision {
		r.mu.Lock()
		r.wrote[req.Key] = max(r.wrote[req.Key], obj.Revision)
		r.mu.Unlock()
	}
	if r.notes != nil && obj.Revision != req.Object.Revision {
		r.notes.note(req.Key, fmt.Sprintf("status of %+v at %d (gen %d) written at %d", req.Object.Value.Spec, req.Object.Revision, req.Object.Value.Generation, obj.Revision))
	}
	r.succeeded(req.Key, req.Object.Revision)
	return reconcile.Result{}, nil
}
