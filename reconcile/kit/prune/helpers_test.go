package prune_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/prune"
	"github.com/converge-go/converge/store"
)

// db is a desired database: the store objects of these tests.
type db struct{ Size int }

const owner = "pgop"

// world is an external system: databases by name, each with the mark its
// maker wrote beside it, and what was done to it.
type world struct {
	mu      sync.Mutex
	dbs     map[string]prune.WorldObject // by name
	deleted []string                     // names, in order
	// onList and onDelete run inside World and Delete, before they
	// answer: a test's way to act while a pass is in progress.
	onList, onDelete func()
}

func newWorld(objs ...prune.WorldObject) *world {
	w := &world{dbs: map[string]prune.WorldObject{}}
	for _, obj := range objs {
		w.dbs[obj.Name] = obj
	}
	return w
}

// nameOf is the database of key "dbs/NAME".
func nameOf(key string) string { return key[len("dbs/"):] }

func (w *world) list(context.Context) ([]prune.WorldObject, error) {
	if w.onList != nil {
		w.onList()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]prune.WorldObject, 0, len(w.dbs))
	for _, obj := range w.dbs {
		out = append(out, obj)
	}
	slices.SortFunc(out, func(a, b prune.WorldObject) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

func (w *world) delete(_ context.Context, obj prune.WorldObject) error {
	if w.onDelete != nil {
		w.onDelete()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.dbs, obj.Name)
	w.deleted = append(w.deleted, obj.Name)
	return nil
}

// ensure makes key's database with mark, if it is missing.
func (w *world) ensure(key string, mark prune.Mark) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.dbs[nameOf(key)]; !ok {
		w.dbs[nameOf(key)] = prune.WorldObject{Key: key, Name: nameOf(key), Mark: mark}
	}
}

func (w *world) names() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for name := range w.dbs {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func (w *world) deletedNames() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.deleted)
}

// object is a world object for key with mark.
func object(key string, mark prune.Mark) prune.WorldObject {
	return prune.WorldObject{Key: key, Name: nameOf(key), Mark: mark}
}

// operator is a controller that makes a marked database for each desired
// key and does nothing for a deleted one (as an operator that was down
// when it was deleted): what is left is the pruner's to delete.
func operator(t *testing.T, s store.Store[*db], w *world, mark prune.Mark) *reconcile.Controller[*db] {
	t.Helper()
	c, err := reconcile.New(s, reconcile.ReconcilerFunc[*db](func(_ context.Context, req reconcile.Request[*db]) (reconcile.Result, error) {
		if !req.Deleted {
			w.ensure(req.Key, mark)
		}
		return reconcile.Result{}, nil
	}), reconcile.Options[*db]{Name: owner, Prefix: "dbs/", HeartbeatInterval: time.Second})
	require.NoError(t, err)
	return c
}

// identity returns s's identity.
func identity(t *testing.T, s store.Identifier) string {
	t.Helper()
	id, err := s.Identity(t.Context())
	require.NoError(t, err)
	return id
}

// newPruner returns a pruner of w for c over s, with opts' other fields.
func newPruner(t *testing.T, c prune.Controller, s store.Store[*db], w *world, opts prune.Options) *prune.Pruner[*db] {
	t.Helper()
	opts.Name, opts.Prefix, opts.World, opts.Delete = owner, "dbs/", w.list, w.delete
	p, err := prune.New(c, s, opts)
	require.NoError(t, err)
	return p
}

// runner is something with a Run method: a controller or a pruner.
type runner interface{ Run(context.Context) error }

// start runs r until the returned stop is called, which checks that Run
// returned nil.
func start(t *testing.T, r runner) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	synctest.Wait()
	return func() {
		cancel()
		require.NoError(t, <-done)
	}
}

// synced runs c and waits until it has reconciled every change so far.
func synced(t *testing.T, c *reconcile.Controller[*db], s store.Store[*db]) (stop func()) {
	t.Helper()
	stop = start(t, c)
	rev, err := s.Revision(t.Context())
	require.NoError(t, err)
	require.NoError(t, c.WaitForRevision(t.Context(), rev))
	synctest.Wait()
	return stop
}

// put creates key.
func put(t *testing.T, s store.Store[*db], key string) {
	t.Helper()
	_, err := s.Create(t.Context(), key, &db{Size: 1})
	require.NoError(t, err)
}

// del deletes key.
func del(t *testing.T, s store.Store[*db], key string) {
	t.Helper()
	obj, err := s.Get(t.Context(), key)
	require.NoError(t, err)
	_, err = s.Delete(t.Context(), key, obj.Revision)
	require.NoError(t, err)
}

// fakeController is a Controller whose answers a test sets, recording the
// keys handed to Enqueue.
type fakeController struct {
	mu       sync.Mutex
	ready    error
	enqueued []string
}

func (f *fakeController) WaitForSync(ctx context.Context) error {
	f.mu.Lock()
	err := f.ready
	f.mu.Unlock()
	if errors.Is(err, reconcile.ErrNotSynced) {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (f *fakeController) Ready() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ready
}

func (f *fakeController) Enqueue(key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.enqueued = append(f.enqueued, key)
	return nil
}

func (f *fakeController) setReady(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ready = err
}
