package debugpage_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
	"github.com/converge-go/converge/store"
)

// A controller's dependency down shows on the page: in the JSON with its
// state, since when, for how long, its failures and latest error; in the
// HTML as "down", highlighted with the same, escaped, and the statement
// that no key is reconciled until it is up; a dependency up shows as up.
// The process's own dependencies (Options.Dependencies) show above the
// controllers.
func TestADependencyDownShowsOnThePageWithSinceWhenAndTheLastError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Bool
		check := func(context.Context) error {
			if down.Load() {
				return errors.New("dial tcp: <refused>")
			}
			return nil
		}
		ok := func(context.Context) error { return nil }
		c, err := reconcile.New(store.NewMemory[int](), reconcile.ReconcilerFunc[int](func(context.Context, reconcile.Request[int]) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		}), reconcile.Options[int]{Name: "roles", Dependencies: []*dependency.Dependency{
			{Name: "postgres", Check: check, Interval: time.Second},
			{Name: "broker", Check: ok, Interval: time.Second},
		}})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		defer func() { cancel(); require.NoError(t, <-done) }()
		process, err := dependency.NewSet(&dependency.Dependency{Name: "vault", Check: ok})
		require.NoError(t, err)
		h := debugpage.New(debugpage.Options{Dependencies: process.States}, c)

		synctest.Wait()
		down.Store(true)
		<-time.After(3 * time.Second)
		synctest.Wait()
		wentDown := time.Now()
		<-time.After(time.Minute)
		synctest.Wait() // the checks due now are done before the page and Health are read
		var p struct {
			Dependencies []map[string]any
			Controllers  []struct{ Dependencies []map[string]any }
		}
		require.NoError(t, json.Unmarshal(get(t, h, "/?format=json").Body.Bytes(), &p))
		require.Len(t, p.Controllers, 1)
		deps := p.Controllers[0].Dependencies
		require.Len(t, deps, 2)
		assert.Equal(t, "postgres", deps[0]["name"])
		assert.Equal(t, debugpage.DependencyDown, deps[0]["state"])
		assert.Equal(t, wentDown.UTC().Format("2006-01-02T15:04:05.000Z07:00"), deps[0]["since"])
		assert.Equal(t, "1m0s", deps[0]["for"])
		failures := c.Health().Dependencies[0].Failures
		require.GreaterOrEqual(t, failures, dependency.DefaultFailureThreshold)
		assert.Equal(t, float64(failures), deps[0]["failures"])
		assert.Equal(t, "dial tcp: <refused>", deps[0]["lastError"])
		assert.NotEmpty(t, deps[0]["lastCheck"])
		assert.Equal(t, debugpage.DependencyUp, deps[1]["state"])
		require.Len(t, p.Dependencies, 1)
		assert.Equal(t, "vault", p.Dependencies[0]["name"])

		html := get(t, h, "/").Body.String()
		assert.Contains(t, html, `<span class="dependency down" data-dependency="postgres"><code>postgres</code> <b class="bad">down</b></span>`)
		assert.Contains(t, html, `<span class="dependency up" data-dependency="broker"><code>broker</code> <b class="ok">up</b></span>`)
		assert.Contains(t, html, `<div class="bad dependency-down" data-dependency="postgres">dependency <code>postgres</code> down for 1m0s (since `+
			wentDown.UTC().Format("2006-01-02T15:04:05.000Z07:00")+`, failures: `+strconv.Itoa(failures)+`): dial tcp: &lt;refused&gt;; no key is reconciled until it is up</div>`)
		assert.Contains(t, html, `process dependencies: <span class="dependency up" data-dependency="vault">`)
		assert.NotContains(t, html, "<refused>", "the error is escaped")
	})
}

// A controller without dependencies shows none, in the JSON and the HTML.
func TestAControllerWithoutDependenciesShowsNone(t *testing.T) {
	h := debugpage.New(debugpage.Options{}, fake{"plain"})
	assert.NotContains(t, get(t, h, "/?format=json").Body.String(), "dependencies")
	assert.NotContains(t, get(t, h, "/").Body.String(), "dependencies:")
}
