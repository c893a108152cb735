package debugpage_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
	"github.com/converge-go/converge/store"
)

// Controllers sharing one dependency, started at different instants, show
// it on the page in one state: down in each from the same instant, with
// the same failures and latest error.
func TestControllersSharingADependencyShowItDownFromTheSameInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Bool
		pg := &dependency.Dependency{Name: "postgres", Interval: time.Second, Check: func(context.Context) error {
			if down.Load() {
				return errors.New("connection refused")
			}
			return nil
		}}
		var ctrls []debugpage.Controller
		for _, name := range []string{"roles", "databases", "backups"} {
			c, err := reconcile.New(store.NewMemory[int](), reconcile.ReconcilerFunc[int](func(context.Context, reconcile.Request[int]) (reconcile.Result, error) {
				return reconcile.Result{}, nil
			}), reconcile.Options[int]{Name: name, Dependencies: []*dependency.Dependency{pg}})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx) }()
			defer func() { cancel(); require.NoError(t, <-done) }()
			ctrls = append(ctrls, c)
			<-time.After(300 * time.Millisecond) // each at its own phase of the interval
		}
		h := debugpage.New(debugpage.Options{}, ctrls...)
		down.Store(true)
		var p struct {
			Controllers []struct{ Dependencies []map[string]any }
		}
		anyDown := func() bool {
			for _, c := range p.Controllers {
				if c.Dependencies[0]["state"] == debugpage.DependencyDown {
					return true
				}
			}
			return false
		}
		for {
			synctest.Wait()
			require.NoError(t, json.Unmarshal(get(t, h, "/?format=json").Body.Bytes(), &p))
			if anyDown() {
				break
			}
			<-time.After(100 * time.Millisecond)
		}
		for i, c := range p.Controllers {
			require.Equal(t, p.Controllers[0].Dependencies, c.Dependencies, "controller %d", i)
		}
	})
}
