package manager_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/store"
)

// dependentController returns a controller named name over an empty store
// whose dependencies are deps.
func dependentController(t *testing.T, name string, deps ...*dependency.Dependency) *reconcile.Controller[int] {
	t.Helper()
	return blamingController(t, store.NewMemory[int](), name, deps...)
}

// blamingController returns a controller named name over s whose
// dependencies are deps and whose reconciles blame the first of them
// (dependency.Down) for a key whose value is negative.
func blamingController(t *testing.T, s store.Store[int], name string, deps ...*dependency.Dependency) *reconcile.Controller[int] {
	t.Helper()
	c, err := reconcile.New(s, reconcile.ReconcilerFunc[int](func(_ context.Context, req reconcile.Request[int]) (reconcile.Result, error) {
		if req.Object.Value < 0 {
			return reconcile.Result{}, dependency.Down(deps[0].Name, errRefused)
		}
		return reconcile.Result{}, nil
	}), reconcile.Options[int]{Name: name, Dependencies: deps})
	require.NoError(t, err)
	return c
}

// A manager and its controllers given one *dependency.Dependency check it
// once per Interval between them, and are unready for it from the same
// instant, whether its check or a reconcile of one of them found it down:
// /readyz names it for the manager and for every controller.
func TestAManagerAndItsControllersShareOneCheckOfADependency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := &database{}
		var checks atomic.Int64
		pg := &dependency.Dependency{Name: "postgres", Interval: time.Second, Check: func(ctx context.Context) error {
			checks.Add(1)
			return db.check(ctx)
		}}
		rolesStore := store.NewMemory[int]()
		roles, databases := blamingController(t, rolesStore, "roles", pg), dependentController(t, "databases", pg)
		s := servePipe(t, manager.Options{Dependencies: []*dependency.Dependency{pg}}, manager.ServerOptions{}, nil, roles, databases)
		synctest.Wait()
		before := checks.Load()
		<-time.After(10 * time.Second)
		synctest.Wait()
		require.Equal(t, int64(10), checks.Load()-before, "not one check per interval for the process")

		db.down.Store(true)
		for synctest.Wait(); s.m.Ready() == nil; synctest.Wait() {
			require.NoError(t, roles.Ready())
			require.NoError(t, databases.Ready())
			<-time.After(100 * time.Millisecond)
		}
		require.ErrorIs(t, roles.Ready(), dependency.ErrDown, "the manager saw it down before roles")
		require.ErrorIs(t, databases.Ready(), dependency.ErrDown, "the manager saw it down before databases")
		code, body := s.do(t, newRequest(t, http.MethodGet, base+"/readyz"))
		require.Equal(t, http.StatusServiceUnavailable, code)
		for _, part := range []string{"dependencies", "roles", "databases"} {
			require.Contains(t, body, part+": dependency: down: postgres since ")
		}

		db.down.Store(false)
		<-time.After(time.Second)
		synctest.Wait()
		require.NoError(t, s.m.Ready())
		_, err := rolesStore.Create(context.Background(), "app", -1) // a reconcile of roles finds it down
		require.NoError(t, err)
		synctest.Wait()
		require.ErrorIs(t, s.m.Ready(), dependency.ErrDown, "blamed by roles, not down for the manager")
		require.ErrorIs(t, databases.Ready(), dependency.ErrDown, "blamed by roles, not down for databases")
	})
}

// Add refuses, with ErrInvalid, a controller that depends on another
// *dependency.Dependency of the name of one the manager or an added
// controller has: the two would check one system apart and see it down at
// different instants. The same one given to all is accepted.
func TestTwoDependenciesOfOneNameInOneManagerAreRefused(t *testing.T) {
	ok := func(context.Context) error { return nil }
	pg := &dependency.Dependency{Name: "postgres", Check: ok}
	other := &dependency.Dependency{Name: "postgres", Check: ok}

	m, err := manager.New(manager.Options{Dependencies: []*dependency.Dependency{pg}})
	require.NoError(t, err)
	require.NoError(t, m.Add(dependentController(t, "roles", pg)))
	err = m.Add(dependentController(t, "databases", other))
	require.ErrorIs(t, err, manager.ErrInvalid)
	require.ErrorContains(t, err, `runnable "databases" depends on a dependency named "postgres" other than the one of the manager`)

	m, err = manager.New(manager.Options{})
	require.NoError(t, err)
	require.NoError(t, m.Add(dependentController(t, "roles", pg)))
	require.NoError(t, m.Add(dependentController(t, "backups", pg)), "the same one")
	err = m.Add(dependentController(t, "databases", other))
	require.ErrorIs(t, err, manager.ErrInvalid)
	require.ErrorContains(t, err, `other than the one of runnable "roles"`)
	require.NoError(t, m.Add(dependentController(t, "databases", pg)), "refused, then given the shared one")
}
