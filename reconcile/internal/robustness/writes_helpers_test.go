package robustness_test

import (
	"context"
	"sync"
	"testing"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// The writes tests prove, on memory, bolt and an embedded etcd member, what
// a reconcile's writes through Request.Store guarantee: the backoff of a
// key survives its own status writes, a reconcile never gets an object
// older than its controller's own last write, another writer's change
// still wakes the key, and a deposed leader's writes are rejected.

// startController runs c until the test ends (or until the returned stop
// is called), and fails the test if Run returns an error.
func startController(t *testing.T, c *reconcile.Controller[*replicaSet]) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	stop = sync.OnceFunc(func() {
		cancel()
		require.NoError(t, <-done, "the controller's Run")
	})
	t.Cleanup(stop)
	return stop
}

// bumpReady writes the status Ready+1 through the request's store.
func bumpReady(ctx context.Context, req reconcile.Request[*replicaSet]) (store.Object[*replicaSet], error) {
	return resource.WriteStatus(ctx, req.Store, req.Object, rsStatus{Ready: req.Object.Value.Status.Ready + 1})
}
