package tenlines_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/reconcile/reconciletest"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/faultstore"
)

// TestTheTenLinesControllerGoesIdleOnceConverged: the README's controller
// (Example's ten lines, the reconciler as written there) reconciles and
// writes nothing once its apps run, and reconciling them again changes
// neither the store nor the world.
func TestTheTenLinesControllerGoesIdleOnceConverged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := reconciletest.NewEnv(t)
		s, err := apistore.New(reconciletest.Wrap(env, store.NewMemory[*App](), faultstore.Options{}), resource.Kind[AppSpec, AppStatus]{})
		if err != nil {
			t.Fatal(err)
		}
		rec := reconcile.ReconcilerFunc[*App](func(ctx context.Context, req reconcile.Request[*App]) (reconcile.Result, error) {
			obj, deleting, err := resource.Finalize(ctx, req, "example.com/teardown", func(ctx context.Context) error {
				return teardown(ctx, req.Key)
			})
			if deleting || err != nil {
				return reconcile.Result{}, err
			}
			status, err := ensure(ctx, req.Key, obj.Value.Spec)
			if err != nil {
				return reconcile.Result{}, err
			}
			_, err = resource.WriteStatus(ctx, req.Store, obj, status)
			return reconcile.Result{}, err
		})
		c, err := reconcile.New(s, rec, reconcile.Options[*App]{Name: "apps", Workers: 8, Metrics: env.Metrics()})
		if err != nil {
			t.Fatal(err)
		}
		for _, app := range []string{"web", "api", "worker"} {
			if _, err := resource.PutSpec(t.Context(), s, "apps/"+app, AppSpec{Image: app + ":1"}); err != nil {
				t.Fatal(err)
			}
		}
		env.Start(c)
		snapshot := func() any {
			world.Lock()
			defer world.Unlock()
			return map[string]string{"web": world.running["apps/web"], "api": world.running["apps/api"], "worker": world.running["apps/worker"]}
		}
		env.CheckIdle(time.Minute, snapshot)
		for _, app := range []string{"web", "api", "worker"} {
			obj, err := s.Get(t.Context(), "apps/"+app)
			if err != nil || obj.Value.Status.Running != app+":1" {
				t.Fatalf("apps/%s: %+v, %v: want it running %s:1", app, obj.Value, err, app)
			}
		}
		for _, app := range []string{"web", "api", "worker"} { // leave the world as Example expects it
			if err := teardown(t.Context(), "apps/"+app); err != nil {
				t.Fatal(err)
			}
		}
	})
}
