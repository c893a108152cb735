package store_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/converge-go/converge/store"
)

// Fencing across types: a lease record and the objects written on the
// lease's behalf live in views of one byte store, so a write can be guarded
// on the lease; once a new term begins, the deposed holder's write is
// rejected.
func ExampleNewView() {
	ctx := context.Background()
	raw := store.NewMemory[[]byte]()
	type lease struct{ Holder string }
	type config struct{ Version int }
	leases := store.NewView[lease](raw, nil)
	configs := store.NewView[config](raw, nil)

	term, _ := leases.Create(ctx, "leader", lease{Holder: "host-a"})
	fence := store.Guard{Key: "leader", Revision: term.CreateRevision, Created: true}
	cfg, _ := configs.Create(ctx, "config/app", config{Version: 1}, fence)

	// host-a pauses; host-b takes over with a new term.
	leases.Delete(ctx, "leader", term.Revision)
	leases.Create(ctx, "leader", lease{Holder: "host-b"})

	_, err := configs.Update(ctx, "config/app", config{Version: 2}, cfg.Revision, fence)
	fmt.Println("late write rejected:", errors.Is(err, store.ErrGuardFailed))
	// Output:
	// late write rejected: true
}
