package manager_test

import (
	"context"
	"errors"
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

// database is a dependency a test takes down and brings back.
type database struct{ down atomic.Bool }

var errRefused = errors.New("dial tcp 10.0.0.5:5432: connection refused")

func (d *database) check(context.Context) error {
	if d.down.Load() {
		return errRefused
	}
	return nil
}

// A dependency of the manager that is down makes it unready: Ready fails
// with an error matching dependency.ErrDown, /readyz answers 503 naming
// the dependency, since when and why to a request with a token and the
// one word "unready" to one without; /healthz stays 200; Dependencies
// shows it down. One successful check makes the manager ready again.
func TestADependencyDownMakesTheManagerUnreadyNamingItButNeverUnhealthy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := &database{}
		mopts := manager.Options{Dependencies: []*dependency.Dependency{{Name: "postgres", Check: db.check, Interval: time.Second}}}
		s := servePipe(t, mopts, manager.ServerOptions{Tokens: []string{debugToken}}, nil)
		synctest.Wait()
		withToken := []string{"Authorization", "Bearer " + debugToken}
		probe := func(path string, headers ...string) (int, string) {
			return s.do(t, newRequest(t, http.MethodGet, base+path, headers...))
		}
		require.NoError(t, s.m.Ready())

		db.down.Store(true)
		<-time.After(dependency.DefaultFailureThreshold * time.Second)
		synctest.Wait()
		err := s.m.Ready()
		require.ErrorIs(t, err, dependency.ErrDown)
		require.ErrorContains(t, err, "postgres")
		code, body := probe("/readyz", withToken...)
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Regexp(t, `^dependencies: dependency: down: postgres since \S+ \(failures: 3\): `+errRefused.Error()+"\n$", body)
		code, body = probe("/readyz")
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Equal(t, "unready\n", body, "the dependency's name and error without a token")
		code, body = probe("/healthz", withToken...)
		require.Equal(t, http.StatusOK, code, "a dependency down is not unhealthy")
		require.Equal(t, "ok\n", body)
		require.NoError(t, s.m.Healthy())
		st := s.m.Dependencies()
		require.Len(t, st, 1)
		require.True(t, st[0].Down)
		require.Equal(t, errRefused.Error(), st[0].LastError)

		db.down.Store(false)
		<-time.After(time.Second)
		synctest.Wait()
		require.NoError(t, s.m.Ready())
		code, _ = probe("/readyz")
		require.Equal(t, http.StatusOK, code)
	})
}

// A controller's own dependency down makes the manager unready through
// the controller's Ready: /readyz names the controller and the
// dependency.
func TestAControllersDependencyDownMakesTheManagerUnready(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := &database{}
		c, err := reconcile.New(store.NewMemory[int](), reconcile.ReconcilerFunc[int](func(context.Context, reconcile.Request[int]) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		}), reconcile.Options[int]{Name: "roles", Dependencies: []*dependency.Dependency{{Name: "postgres", Check: db.check}}})
		require.NoError(t, err)
		s := servePipe(t, manager.Options{}, manager.ServerOptions{}, nil, c)
		synctest.Wait()
		require.NoError(t, s.m.Ready())

		db.down.Store(true)
		<-time.After(dependency.DefaultFailureThreshold * dependency.DefaultInterval)
		synctest.Wait()
		require.ErrorIs(t, s.m.Ready(), dependency.ErrDown)
		code, body := s.do(t, newRequest(t, http.MethodGet, base+"/readyz"))
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Regexp(t, `^roles: dependency: down: postgres since `, body)
		require.NoError(t, s.m.Healthy())
	})
}

// A bad dependency makes New fail with ErrInvalid; without dependencies
// the manager has none to report.
func TestABadManagerDependencyIsErrInvalid(t *testing.T) {
	_, err := manager.New(manager.Options{Dependencies: []*dependency.Dependency{{Name: "postgres"}}})
	require.ErrorIs(t, err, manager.ErrInvalid)
	m, err := manager.New(manager.Options{})
	require.NoError(t, err)
	require.Empty(t, m.Dependencies())
}
