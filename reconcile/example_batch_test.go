package reconcile_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
)

// routeTable is a pretend kernel routing table whose API programs many
// routes per call.
type routeTable struct {
	mu     sync.Mutex
	routes map[string]string
	calls  int
}

// routes reconciles desired routes (key: destination, value: gateway) into
// the table, up to 64 routes per call.
type routes struct{ table *routeTable }

// Reconcile programs one route: a batch of one.
func (r routes) Reconcile(ctx context.Context, req reconcile.Request[string]) (reconcile.Result, error) {
	res := r.ReconcileBatch(ctx, []reconcile.Request[string]{req})
	return res[0].Result, res[0].Err
}

// ReconcileBatch programs every route of the batch in one call and
// returns a result per route.
func (r routes) ReconcileBatch(ctx context.Context, reqs []reconcile.Request[string]) []reconcile.BatchResult {
	r.table.mu.Lock()
	defer r.table.mu.Unlock()
	r.table.calls++
	for _, req := range reqs {
		if req.Deleted {
			delete(r.table.routes, req.Key)
		} else {
			r.table.routes[req.Key] = req.Object.Value
		}
	}
	return make([]reconcile.BatchResult, len(reqs)) // all programmed
}

// A reconciler with a batch form converges many keys per call of the
// world's API; each key keeps its own result, backoff and status.
func ExampleBatchReconciler() {
	ctx, stop := context.WithCancel(context.Background())
	s := store.NewMemory[string]()
	var rev int64
	for i := range 200 {
		obj, _ := s.Create(ctx, fmt.Sprintf("10.0.%d.0/24", i), "192.168.0.1")
		rev = obj.Revision
	}
	table := &routeTable{routes: map[string]string{}}
	c, err := reconcile.New(s, routes{table}, reconcile.Options[string]{Name: "routes", BatchSize: 64})
	if err != nil {
		panic(err)
	}
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	c.WaitForRevision(ctx, rev)

	table.mu.Lock()
	fmt.Println("routes:", len(table.routes), "calls:", table.calls)
	table.mu.Unlock()
	stop()
	<-done
	// The 200 routes were all listed before the worker started: they went
	// in batches of 64, 64, 64 and 8.

	// Output:
	// routes: 200 calls: 4
}
