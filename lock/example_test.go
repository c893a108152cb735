package lock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/store"
)

// Keyed serialises work per key: two updates of the same account never run
// at once, updates of different accounts do.
func ExampleKeyed() {
	var accounts lock.Keyed[string]
	balance := map[string]int{}
	var balanceMu sync.Mutex // guards the map itself; Keyed guards each account
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			ctx := context.Background()
			if err := accounts.Lock(ctx, "alice"); err != nil {
				return
			}
			defer accounts.Unlock("alice")
			balanceMu.Lock()
			balance["alice"]++
			balanceMu.Unlock()
		})
	}
	wg.Wait()
	fmt.Println("alice:", balance["alice"])
	fmt.Println("unlock again:", errors.Is(accounts.Unlock("alice"), lock.ErrNotLocked))
	// Output:
	// alice: 100
	// unlock again: true
}

// A lease's holder makes its writes with the lease's guard: once it has been
// deposed, the store rejects them even if the holder has not noticed yet.
func ExampleLease() {
	ctx := context.Background()
	s := store.NewMemory[lock.Record]()
	defer s.Close()

	lease, err := lock.NewLease(s, "leases/scheduler", lock.LeaseOptions{Holder: "node-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	held, err := lease.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("token:", held.Token())

	// Work done for the lease runs under its context and writes with its guard.
	_, err = s.Create(held.Context(), "jobs/last-run", lock.Record{Holder: "node-1"}, held.Guard())
	fmt.Println("write while holding:", err)

	if err := held.Release(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("context after release:", context.Cause(held.Context()))
	_, err = s.Create(ctx, "jobs/next-run", lock.Record{Holder: "node-1"}, held.Guard())
	fmt.Println("write after release rejected:", errors.Is(err, store.ErrGuardFailed))
	// Output:
	// token: 1
	// write while holding: <nil>
	// context after release: lock: lease released: "leases/scheduler"
	// write after release rejected: true
}

// An Elector runs a function while its process leads; the function's context
// is cancelled the moment leadership is in doubt.
func ExampleElector() {
	s := store.NewMemory[lock.Record]()
	defer s.Close()
	lease, err := lock.NewLease(s, "leases/controller", lock.LeaseOptions{Holder: "node-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	elector, err := lock.NewElector(lease, lock.ElectorOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx, stop := context.WithCancel(context.Background())
	err = elector.Run(ctx, func(ctx context.Context) error {
		fmt.Println("leading:", elector.IsLeader())
		stop() // a real leader works until ctx ends; here we stop the program
		<-ctx.Done()
		return nil
	})
	fmt.Println("run:", err, "leading:", elector.IsLeader())
	_, err = s.Get(context.Background(), "leases/controller")
	fmt.Println("lease released:", errors.Is(err, store.ErrNotFound))
	// Output:
	// leading: true
	// run: <nil> leading: false
	// lease released: true
}
