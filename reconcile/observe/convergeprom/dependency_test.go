package convergeprom_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/reconcile/observe/convergeprom"
	"github.com/converge-go/converge/store"
)

const dependencyHelp = `# HELP converge_dependency_down_seconds Seconds since the controller's dependency went down, 0 while it is up
# TYPE converge_dependency_down_seconds gauge
# HELP converge_dependency_up 1 while the controller's dependency is up, 0 while it is down and the controller holds its keys (Health().Dependencies)
# TYPE converge_dependency_up gauge
`

// TestDependencySeriesFollowAControllersDependencyDownAndBack: a watched
// controller reports converge_dependency_up 1 and
// converge_dependency_down_seconds 0 per dependency while it is up; once
// one is down, up is 0 and down_seconds the time since it went down, read
// at each scrape; at its recovery, 1 and 0 again.
func TestDependencySeriesFollowAControllersDependencyDownAndBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m, err := convergeprom.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		var down atomic.Bool
		check := func(context.Context) error {
			if down.Load() {
				return errors.New("connection refused")
			}
			return nil
		}
		ok := func(context.Context) error { return nil }
		opts := reconcile.Options[string]{Name: "roles", Dependencies: []*dependency.Dependency{
			{Name: "postgres", Check: check, Interval: time.Second},
			{Name: "broker", Check: ok, Interval: time.Second},
		}}
		ctl := convergeprom.Instrument(m, &opts)
		c, err := reconcile.New(store.NewMemory[string](), reconcile.ReconcilerFunc[string](func(context.Context, reconcile.Request[string]) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		}), opts)
		if err != nil {
			t.Fatal(err)
		}
		ctl.Watch(c)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}()
		names := []string{"converge_dependency_up", "converge_dependency_down_seconds"}
		synctest.Wait()
		requireSeries(t, reg, dependencyHelp+`converge_dependency_down_seconds{controller="roles",dependency="broker"} 0
converge_dependency_down_seconds{controller="roles",dependency="postgres"} 0
converge_dependency_up{controller="roles",dependency="broker"} 1
converge_dependency_up{controller="roles",dependency="postgres"} 1
`, names...)

		down.Store(true)
		<-time.After(dependency.DefaultFailureThreshold * time.Second)
		<-time.After(30 * time.Second)
		synctest.Wait()
		requireSeries(t, reg, dependencyHelp+`converge_dependency_down_seconds{controller="roles",dependency="broker"} 0
converge_dependency_down_seconds{controller="roles",dependency="postgres"} 30
converge_dependency_up{controller="roles",dependency="broker"} 1
converge_dependency_up{controller="roles",dependency="postgres"} 0
`, names...)

		down.Store(false)
		<-time.After(time.Second)
		synctest.Wait()
		requireSeries(t, reg, dependencyHelp+`converge_dependency_down_seconds{controller="roles",dependency="broker"} 0
converge_dependency_down_seconds{controller="roles",dependency="postgres"} 0
converge_dependency_up{controller="roles",dependency="broker"} 1
converge_dependency_up{controller="roles",dependency="postgres"} 1
`, names...)
	})
}
