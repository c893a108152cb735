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

// TestControllersSharingADependencyReportOneOutage: two watched
// controllers given one *dependency.Dependency, started at different
// phases of its interval, report it down from the same instant: the same
// converge_dependency_up and converge_dependency_down_seconds, one series
// per controller.
func TestControllersSharingADependencyReportOneOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m, err := convergeprom.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		var down atomic.Bool
		pg := &dependency.Dependency{Name: "postgres", Interval: time.Second, Check: func(context.Context) error {
			if down.Load() {
				return errors.New("connection refused")
			}
			return nil
		}}
		for _, name := range []string{"roles", "databases"} {
			opts := reconcile.Options[string]{Name: name, Dependencies: []*dependency.Dependency{pg}}
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
			<-time.After(400 * time.Millisecond) // each at its own phase of the interval
		}
		down.Store(true)
		<-time.After(dependency.DefaultFailureThreshold * time.Second)
		<-time.After(30 * time.Second)
		synctest.Wait()
		requireSeries(t, reg, dependencyHelp+`converge_dependency_down_seconds{controller="databases",dependency="postgres"} 30.8
converge_dependency_down_seconds{controller="roles",dependency="postgres"} 30.8
converge_dependency_up{controller="databases",dependency="postgres"} 0
converge_dependency_up{controller="roles",dependency="postgres"} 0
`, "converge_dependency_up", "converge_dependency_down_seconds")
	})
}
