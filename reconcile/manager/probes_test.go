package manager_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/manager"
)

// probe serves one request to h and returns the status code and body.
func probe(h http.Handler) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	return rec.Code, rec.Body.String()
}

func TestManagerReadinessFollowsReadyCheckers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errNotSynced := errors.New("not synced")
		cache := mgrChecked{&mgrRunnable{name: "cache", run: untilDone(make(chan struct{}))}}
		cache.set(errNotSynced, nil)
		plain := &mgrRunnable{name: "plain", run: untilDone(make(chan struct{}))}
		m := newTestManager(t, manager.Options{}, cache, plain)

		assert.ErrorIs(t, m.Ready(), manager.ErrNotRunning, "ready before Run")
		code, body := probe(m.Readyz())
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Contains(t, body, "manager: ")

		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- m.Run(ctx) }()
		synctest.Wait()

		assert.ErrorIs(t, m.Ready(), errNotSynced)
		code, body = probe(m.Readyz())
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Equal(t, "cache: not synced\n", body)

		cache.set(nil, nil)
		assert.NoError(t, m.Ready())
		code, body = probe(m.Readyz())
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "ok\n", body)

		cancel()
		require.NoError(t, <-errc)
		assert.ErrorIs(t, m.Ready(), manager.ErrNotRunning, "ready after stop")
		code, _ = probe(m.Readyz())
		assert.Equal(t, http.StatusServiceUnavailable, code)
	})
}

func TestManagerHealthzReportsFailingChecks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errStuck := errors.New("reconcile of \"k\" stuck\nfor 1m")
		a := mgrChecked{&mgrRunnable{name: "a", run: untilDone(make(chan struct{}))}}
		b := mgrChecked{&mgrRunnable{name: "b", run: untilDone(make(chan struct{}))}}
		fine := mgrChecked{&mgrRunnable{name: "fine", run: untilDone(make(chan struct{}))}}
		a.set(nil, errStuck)
		b.set(nil, errors.New("store unreachable"))
		m := newTestManager(t, manager.Options{}, a, b, fine)

		code, body := probe(m.Healthz())
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Contains(t, body, "not running")

		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- m.Run(ctx) }()
		synctest.Wait()

		err := m.Healthy()
		assert.ErrorIs(t, err, errStuck)
		code, body = probe(m.Healthz())
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Equal(t, "a: reconcile of \"k\" stuck; for 1m\nb: store unreachable\n", body)

		a.set(nil, nil)
		b.set(nil, nil)
		code, body = probe(m.Healthz())
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "ok\n", body)

		cancel()
		require.NoError(t, <-errc)
		code, body = probe(m.Healthz())
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Equal(t, 1, strings.Count(body, "\n"))
		assert.Contains(t, body, "not running")
	})
}

// mgrPanickyChecker panics in its health check.
type mgrPanickyChecker struct{ *mgrRunnable }

func (mgrPanickyChecker) Healthy() error { panic("check exploded") }

func TestManagerHealthCheckPanicIsAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := mgrPanickyChecker{&mgrRunnable{name: "panicky", run: untilDone(make(chan struct{}))}}
		m := newTestManager(t, manager.Options{}, r)
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- m.Run(ctx) }()
		synctest.Wait()

		code, body := probe(m.Healthz())
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Equal(t, "panicky: check panicked: check exploded\n", body)
		cancel()
		require.NoError(t, <-errc)
	})
}
