package drift_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/converge-go/converge/reconcile/kit/drift"
)

// Two polls of a database's roles: between them alice was made superuser
// by hand, bob dropped and carol created. The first poll learns the
// baseline; the second wakes those three keys, and nothing else.
func Example() {
	polls := [][]drift.Observed{
		{
			{Key: "roles/alice", Fingerprint: drift.Fingerprint("login")},
			{Key: "roles/bob", Fingerprint: drift.Fingerprint("login")},
			{Key: "roles/dave", Fingerprint: drift.Fingerprint("nologin")},
		},
		{
			{Key: "roles/alice", Fingerprint: drift.Fingerprint("login", "superuser")},
			{Key: "roles/carol", Fingerprint: drift.Fingerprint("login")},
			{Key: "roles/dave", Fingerprint: drift.Fingerprint("nologin")},
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	list := func(ctx context.Context) ([]drift.Observed, error) {
		if len(polls) == 0 { // the third poll: the example is over
			cancel()
			return nil, ctx.Err()
		}
		objs := polls[0]
		polls = polls[1:]
		return objs, nil
	}
	src, err := drift.New(list, drift.Options{Name: "postgres roles", Interval: time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	// A controller starts its sources itself (reconcile.Options.Sources).
	err = src.Start(ctx, func(key string) { fmt.Println("drifted:", key) })
	fmt.Println("Start returned", err)
	// Output:
	// drifted: roles/alice
	// drifted: roles/bob
	// drifted: roles/carol
	// Start returned <nil>
}

// A database the reconciler made and reported, and someone dropped
// before the first poll: that poll, which would otherwise learn the world
// as it finds it, wakes its key, because the reconciler said what it
// made. The reconcile it wakes makes the database again and says so, and
// the next poll wakes nothing.
func ExampleSource_Reconciled() {
	var mu sync.Mutex
	var world []drift.Observed // no database: dropped by hand
	ctx, cancel := context.WithCancel(context.Background())
	polls := 0
	list := func(ctx context.Context) ([]drift.Observed, error) {
		mu.Lock()
		defer mu.Unlock()
		if polls++; polls == 3 { // the example is over
			cancel()
			return nil, ctx.Err()
		}
		return slices.Clone(world), nil
	}
	src, err := drift.New(list, drift.Options{Name: "postgres databases", Interval: time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	src.Reconciled("dbs/app", drift.Fingerprint("owner=app")) // the reconcile that made it
	reconcile := func(key string) {
		fmt.Println("drifted:", key)
		mu.Lock()
		world = []drift.Observed{{Key: key, Fingerprint: drift.Fingerprint("owner=app")}}
		mu.Unlock()
		src.Reconciled(key, drift.Fingerprint("owner=app"))
	}
	err = src.Start(ctx, reconcile) // a controller queues the key instead
	fmt.Println("Start returned", err)
	// Output:
	// drifted: dbs/app
	// Start returned <nil>
}
