package resource_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
)

type dbSpec struct{ Owner string }

type dbStatus struct{ Exists bool }

type db = resource.Resource[dbSpec, dbStatus]

const dropFinalizer = "test/drop"

// world is an external system: databases made for objects, with counts of
// what was done to it.
type world struct {
	mu      sync.Mutex
	dbs     map[string]string
	creates map[string]int
	failing int // cleanups still to fail
}

func newWorld() *world { return &world{dbs: map[string]string{}, creates: map[string]int{}} }

func (w *world) has(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.dbs[key]
	return ok
}

// drop removes key's database; what is already gone is done.
func (w *world) drop(key string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failing > 0 {
		w.failing--
		return errors.New("drop: the database is busy")
	}
	delete(w.dbs, key)
	return nil
}

// ensure creates key's database if it is missing.
func (w *world) ensure(key, owner string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.dbs[key]; !ok {
		w.dbs[key] = owner
		w.creates[key]++
	}
}

// dbReconciler is the operator's reconcile: the finalizer first, then the
// world, then the status. crashAfterCreate makes the first reconcile of a
// key panic right after creating its database, as a process killed there.
func dbReconciler(w *world, crashAfterCreate bool) reconcile.Reconciler[*db] {
	var mu sync.Mutex
	crashed := map[string]bool{}
	return reconcile.ReconcilerFunc[*db](func(ctx context.Context, req reconcile.Request[*db]) (reconcile.Result, error) {
		obj, deleting, err := resource.Finalize(ctx, req, dropFinalizer, func(context.Context) error { return w.drop(req.Key) })
		if deleting || err != nil {
			return reconcile.Result{}, err
		}
		w.ensure(req.Key, obj.Value.Spec.Owner)
		mu.Lock()
		crash := crashAfterCreate && !crashed[req.Key]
		crashed[req.Key] = true
		mu.Unlock()
		if crash {
			panic("killed between the side effect and the status write")
		}
		_, err = resource.WriteStatus(ctx, req.Store, obj, dbStatus{Exists: true})
		return reconcile.Result{}, err
	})
}

// layered returns a memory store with the API-server layer over it.
func layered(t *testing.T) *apistore.Store[*db] {
	t.Helper()
	s, err := apistore.New[*db](store.NewMemory[*db](), resource.Kind[dbSpec, dbStatus]{})
	require.NoError(t, err)
	return s
}

func newDBController(t *testing.T, s store.Store[*db], w *world, crash bool) *reconcile.Controller[*db] {
	t.Helper()
	c, err := reconcile.New(s, dbReconciler(w, crash), reconcile.Options[*db]{Name: "dbs",
		RateLimiter: queue.NewExponential[string](time.Second, time.Minute, 0)})
	require.NoError(t, err)
	return c
}

// run runs c until the returned stop is called.
func run(t *testing.T, c *reconcile.Controller[*db]) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	require.NoError(t, c.WaitForSync(ctx))
	return func() {
		cancel()
		require.NoError(t, <-done)
	}
}

func converged(t *testing.T, c *reconcile.Controller[*db], s store.Store[*db]) {
	t.Helper()
	rev, err := s.Revision(t.Context())
	require.NoError(t, err)
	require.NoError(t, c.WaitForRevision(t.Context(), rev))
}

// TestADeletionMadeWhileTheControllerIsDownIsCarriedOutWhenItStarts: an
// object deleted while no controller runs stays, marked, with its
// database; the next run of the controller drops the database, and only
// then is the object gone.
func TestADeletionMadeWhileTheControllerIsDownIsCarriedOutWhenItStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, w := layered(t), newWorld()
		obj, err := s.Create(t.Context(), "dbs/app", &db{Spec: dbSpec{Owner: "app"}})
		require.NoError(t, err)
		c := newDBController(t, s, w, false)
		stop := run(t, c)
		converged(t, c, s)
		require.True(t, w.has("dbs/app"))
		obj, err = s.Get(t.Context(), obj.Key)
		require.NoError(t, err)
		require.True(t, obj.Value.HasFinalizer(dropFinalizer), "the finalizer was not added before the database was made")
		stop()

		_, marked, err := s.DeleteWith(t.Context(), obj.Key, obj.Revision, apistore.Background)
		require.NoError(t, err)
		require.True(t, marked)
		left, err := s.Get(t.Context(), obj.Key)
		require.NoError(t, err, "the object went before its cleanup")
		require.True(t, left.Value.Deleting())
		require.True(t, w.has("dbs/app"))

		stop = run(t, newDBController(t, s, w, false))
		defer stop()
		synctest.Wait()
		_, err = s.Get(t.Context(), obj.Key)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.False(t, w.has("dbs/app"), "the database was orphaned")
	})
}

// TestACleanupThatFailsKeepsTheObjectMarkedBacksOffAndShowsInHealth: while
// the cleanup fails, the object stays marked, the key backs off, and
// Health and the key's state show it being deleted with the last error;
// once the cleanup succeeds the object is gone.
func TestACleanupThatFailsKeepsTheObjectMarkedBacksOffAndShowsInHealth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, w := layered(t), newWorld()
		c := newDBController(t, s, w, false)
		defer run(t, c)()
		obj, err := s.Create(t.Context(), "dbs/busy", &db{})
		require.NoError(t, err)
		converged(t, c, s)
		obj, err = s.Get(t.Context(), obj.Key)
		require.NoError(t, err)
		w.mu.Lock()
		w.failing = 3
		w.mu.Unlock()
		_, err = s.Delete(t.Context(), obj.Key, obj.Revision)
		require.NoError(t, err)
		synctest.Wait()
		for attempt := 1; attempt <= 3; attempt++ {
			_, err := s.Get(t.Context(), obj.Key)
			require.NoError(t, err, "attempt %d: the object went while its cleanup failed", attempt)
			h := c.Health()
			require.Equal(t, 1, h.Deleting)
			require.Equal(t, []string{"dbs/busy"}, h.DeletingKeys)
			page := c.Inspect(reconcile.KeyQuery{Prefix: "dbs/busy"})
			require.Len(t, page.Keys, 1)
			require.Contains(t, page.Keys[0].LastError, "busy")
			require.False(t, page.Keys[0].DeletingSince.IsZero())
			<-time.After(time.Duration(1<<(attempt-1)) * time.Second) // the fake clock, to the next retry
			synctest.Wait()
		}
		_, err = s.Get(t.Context(), obj.Key)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.False(t, w.has("dbs/busy"))
		require.Zero(t, c.Health().Deleting)
	})
}

// TestACrashBetweenTheSideEffectAndItsRecordCreatesNothingTwiceAndLeaksNothing:
// a reconcile killed right after creating its database (before the status
// write) is retried without creating it again, and the object's deletion
// then drops it: the finalizer was in place before the database existed.
func TestACrashBetweenTheSideEffectAndItsRecordCreatesNothingTwiceAndLeaksNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, w := layered(t), newWorld()
		c := newDBController(t, s, w, true)
		defer run(t, c)()
		obj, err := s.Create(t.Context(), "dbs/crash", &db{})
		require.NoError(t, err)
		<-time.After(time.Minute) // past the panic's backoff, on the fake clock
		converged(t, c, s)
		got, err := s.Get(t.Context(), obj.Key)
		require.NoError(t, err)
		require.True(t, got.Value.Status.Exists)
		require.Equal(t, 1, w.creates["dbs/crash"], "the database was created twice")
		_, err = s.Delete(t.Context(), obj.Key, got.Revision)
		require.NoError(t, err)
		synctest.Wait()
		require.False(t, w.has("dbs/crash"), "the database leaked")
		_, err = s.Get(t.Context(), obj.Key)
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

// TestACleanupOfWhatIsAlreadyGoneInTheWorldSucceeds: a database dropped by
// hand before its object is deleted does not hold the deletion up.
func TestACleanupOfWhatIsAlreadyGoneInTheWorldSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, w := layered(t), newWorld()
		c := newDBController(t, s, w, false)
		defer run(t, c)()
		obj, err := s.Create(t.Context(), "dbs/gone", &db{})
		require.NoError(t, err)
		converged(t, c, s)
		require.NoError(t, w.drop("dbs/gone")) // by hand
		obj, err = s.Get(t.Context(), obj.Key)
		require.NoError(t, err)
		_, err = s.Delete(t.Context(), obj.Key, obj.Revision)
		require.NoError(t, err)
		synctest.Wait()
		_, err = s.Get(t.Context(), obj.Key)
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

// TestFinalizeRemovesItsFinalizerDespiteAConflictingWriteAndNeverTouchesANewObject:
// a status write racing the removal of the finalizer makes it retry
// against the newer object; an object deleted and created again under the
// same key is another object, which an old cleanup leaves alone.
func TestFinalizeRemovesItsFinalizerDespiteAConflictingWriteAndNeverTouchesANewObject(t *testing.T) {
	ctx := t.Context()
	s := layered(t)
	obj, err := s.Create(ctx, "dbs/a", &db{Meta: apistore.Meta{Finalizers: []string{dropFinalizer, "other"}}})
	require.NoError(t, err)
	_, err = s.Delete(ctx, obj.Key, obj.Revision)
	require.NoError(t, err)
	marked, err := s.Get(ctx, obj.Key)
	require.NoError(t, err)
	// Someone writes the status after the reconcile read the object.
	_, err = resource.WriteStatus(ctx, s, marked, dbStatus{Exists: true})
	require.NoError(t, err)
	req := reconcile.Request[*db]{Key: obj.Key, Object: marked, Deleting: true, Store: s}
	_, deleting, err := resource.Finalize(ctx, req, dropFinalizer, func(context.Context) error { return nil })
	require.NoError(t, err)
	require.True(t, deleting)
	after, err := s.Get(ctx, obj.Key)
	require.NoError(t, err)
	require.Equal(t, []string{"other"}, after.Value.Finalizers)
	require.True(t, after.Value.Status.Exists, "the removal clobbered the status")

	// The object goes, and a new one is made under the same key.
	_, err = s.Update(ctx, obj.Key, withFinalizers(after.Value), after.Revision)
	require.NoError(t, err)
	fresh, err := s.Create(ctx, obj.Key, &db{Meta: apistore.Meta{Finalizers: []string{dropFinalizer}}})
	require.NoError(t, err)
	old := reconcile.Request[*db]{Key: obj.Key, Object: marked, Deleting: true, Store: s}
	_, _, err = resource.Finalize(ctx, old, dropFinalizer, func(context.Context) error { return nil })
	require.NoError(t, err)
	now, err := s.Get(ctx, obj.Key)
	require.NoError(t, err)
	require.Equal(t, fresh.CreateRevision, now.CreateRevision)
	require.Equal(t, []string{dropFinalizer}, now.Value.Finalizers, "an old cleanup touched the new object")
}

// withFinalizers returns a copy of v holding finalizers.
func withFinalizers(v *db, finalizers ...string) *db {
	c := *v
	c.Finalizers = finalizers
	return &c
}

// TestWriteStatusThroughAClientOfAServedStoreWithoutTheLayerWritesTheValue:
// an HTTP client offers the layer's status write whatever the server; a
// server without the layer refuses it as unsupported, and WriteStatus, in
// a controller's reconcile as on its own, then writes the whole value.
func TestWriteStatusThroughAClientOfAServedStoreWithoutTheLayerWritesTheValue(t *testing.T) {
	{ // real time: the store is served on a loopback socket
		served := httpstoretest.Serve[*db](t, store.NewMemory[*db](), httpstoretest.Options{})
		obj, err := served.Client.Create(t.Context(), "dbs/plain", &db{Spec: dbSpec{Owner: "o"}})
		require.NoError(t, err)
		got, err := resource.WriteStatus(t.Context(), served.Client, obj, dbStatus{Exists: true})
		require.NoError(t, err)
		require.True(t, got.Value.Status.Exists)

		w := newWorld()
		c := newDBController(t, served.Client, w, false)
		defer run(t, c)()
		second, err := served.Client.Create(t.Context(), "dbs/second", &db{})
		require.NoError(t, err)
		converged(t, c, served.Client)
		after, err := served.Client.Get(t.Context(), second.Key)
		require.NoError(t, err)
		require.True(t, after.Value.Status.Exists, "the reconcile's status write was lost")
	}
}
