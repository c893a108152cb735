package main

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/reconcile/reconciletest"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/faultstore"
)

// TestTheJobsControllerGoesIdleOverFinishedJobs: the daemon's controller
// (its Reconciler, through the API-server layer) over jobs whose attempts
// have all ended, succeeded or failed, reconciles and writes nothing once
// it has looked at them, and reconciling them again writes nothing
// (reconciletest's CheckIdle). A job has no attempt running here: the
// shims are real processes, which a synctest bubble cannot wait for.
func TestTheJobsControllerGoesIdleOverFinishedJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := reconciletest.NewEnv(t)
		raw := store.NewMemory[*Job]()
		t.Cleanup(func() { _ = raw.Close() })
		s, err := apistore.New(reconciletest.Wrap(env, raw, faultstore.Options{}), resource.Kind[Spec, Status]{})
		if err != nil {
			t.Fatal(err)
		}
		for name, phase := range map[string]Phase{"built": Succeeded, "broken": Failed} {
			job := &Job{Meta: apistore.Meta{Generation: 1}, ObservedGeneration: 1,
				Spec:   Spec{Command: "/bin/true", Retries: 1},
				Status: Status{Phase: phase, Attempts: 1, RunGeneration: 1, RunID: name + "-1"}}
			if _, err := raw.Create(t.Context(), KeyPrefix+name, job); err != nil {
				t.Fatal(err)
			}
		}
		l := newLauncher("/bin/true", t.TempDir(), time.Second)
		backoff := queue.NewExponential[string](time.Second, time.Minute, 0)
		rec := &Reconciler{launcher: l, backoff: backoff, poll: 50 * time.Millisecond}
		c, err := reconcile.New[*Job](s, rec, reconcile.Options[*Job]{
			Name: "jobs", Prefix: KeyPrefix, RateLimiter: backoff, Metrics: env.Metrics(),
		})
		if err != nil {
			t.Fatal(err)
		}
		rec.cached = c.Lister().Get
		env.Start(c)
		env.CheckIdle(time.Minute, nil)
	})
}
