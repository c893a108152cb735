package store_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/converge-go/converge/store"
)

type Config struct {
	Replicas int
	Image    string
}

// Writes are conditioned on the revision the writer read: a writer holding a
// stale revision gets ErrConflict and must re-read.
func Example_conflict() {
	ctx := context.Background()
	s := store.NewMemory[*Config]()
	defer s.Close()

	created, _ := s.Create(ctx, "apps/web", &Config{Replicas: 1, Image: "web:1"})
	_, err := s.Create(ctx, "apps/web", &Config{})
	fmt.Println("create again:", errors.Is(err, store.ErrExists))

	// Two writers read revision 1; the first update wins.
	first, _ := s.Update(ctx, "apps/web", &Config{Replicas: 2, Image: "web:1"}, created.Revision)
	_, err = s.Update(ctx, "apps/web", &Config{Replicas: 1, Image: "web:2"}, created.Revision)
	fmt.Println("stale update:", errors.Is(err, store.ErrConflict))

	// The loser re-reads and applies its change to the current value. Values
	// are shared with the store: copy, then change the copy.
	cur, _ := s.Get(ctx, "apps/web")
	next := *cur.Value
	next.Image = "web:2"
	obj, _ := s.Update(ctx, "apps/web", &next, cur.Revision)
	fmt.Println(first.Revision, obj.Revision, obj.Value.Replicas, obj.Value.Image)
	// Output:
	// create again: true
	// stale update: true
	// 2 3 2 web:2
}

// Modify is the read-modify-write loop: it retries on conflict, so the caller
// only says how to change the value.
func ExampleModify() {
	ctx := context.Background()
	s := store.NewMemory[*Config]()
	defer s.Close()
	s.Create(ctx, "apps/web", &Config{Replicas: 1, Image: "web:1"})

	obj, err := store.Modify(ctx, s, "apps/web", func(cur *Config) (*Config, error) {
		next := *cur // never change cur in place
		next.Replicas++
		return &next, nil
	})
	fmt.Println(obj.Value.Replicas, err)

	_, err = store.Modify(ctx, s, "apps/api", func(cur *Config) (*Config, error) { return cur, nil })
	fmt.Println(errors.Is(err, store.ErrNotFound))
	// Output:
	// 2 <nil>
	// true
}

func ExampleCreateOrUpdate() {
	ctx := context.Background()
	s := store.NewMemory[*Config]()
	defer s.Close()
	scale := func(cur *Config, exists bool) (*Config, error) {
		if !exists {
			return &Config{Replicas: 1, Image: "web:1"}, nil
		}
		next := *cur
		next.Replicas *= 2
		return &next, nil
	}
	for range 3 {
		obj, _ := store.CreateOrUpdate(ctx, s, "apps/web", scale)
		fmt.Println(obj.Value.Replicas)
	}
	// Output:
	// 1
	// 2
	// 4
}

// List then Watch from the list's revision: every change after the snapshot
// is seen exactly once, none is missed.
func Example_listThenWatch() {
	ctx := context.Background()
	s := store.NewMemory[*Config]()
	defer s.Close()
	s.Create(ctx, "apps/web", &Config{Replicas: 1})
	s.Create(ctx, "apps/api", &Config{Replicas: 1})

	objs, rev, _ := s.List(ctx, "apps/")
	for _, o := range objs {
		fmt.Println("listed", o.Key, o.Revision)
	}
	w, _ := s.Watch(ctx, "apps/", rev)
	defer w.Stop()

	web, _ := s.Get(ctx, "apps/web")
	s.Update(ctx, "apps/web", &Config{Replicas: 3}, web.Revision)
	s.Create(ctx, "other/x", &Config{}) // outside the prefix
	s.Delete(ctx, "apps/api", 2)

	for range 2 {
		ev := <-w.Events()
		fmt.Println("event", ev.Type, ev.Object.Key, ev.Object.Revision)
	}
	// Output:
	// listed apps/api 2
	// listed apps/web 1
	// event Updated apps/web 3
	// event Deleted apps/api 5
}

// A guard makes a write conditional on another key, here a leadership lease:
// once the lease has changed hands, the old holder's writes fail.
func ExampleGuard() {
	ctx := context.Background()
	s := store.NewMemory[*Config]()
	defer s.Close()
	lease, _ := s.Create(ctx, "leases/web", &Config{Image: "holder-a"})
	fence := store.Guard{Key: "leases/web", Revision: lease.Revision}

	_, err := s.Create(ctx, "apps/web", &Config{Replicas: 1}, fence)
	fmt.Println("while holding the lease:", err)

	s.Update(ctx, "leases/web", &Config{Image: "holder-b"}, lease.Revision)
	_, err = s.Create(ctx, "apps/api", &Config{Replicas: 1}, fence)
	fmt.Println("after losing it:", errors.Is(err, store.ErrGuardFailed))
	// Output:
	// while holding the lease: <nil>
	// after losing it: true
}

// WithMutationCheck catches code that changes a value it got from the store.
func ExampleWithMutationCheck() {
	ctx := context.Background()
	s := store.NewMemory[*Config](store.WithMutationCheck(func(err error) { fmt.Println(err) }))
	defer s.Close()
	obj, _ := s.Create(ctx, "apps/web", &Config{Replicas: 1})
	obj.Value.Replicas = 5 // forbidden: the value is shared with the store
	s.Get(ctx, "apps/web")
	// Output:
	// store: shared value was mutated: value of "apps/web" stored at revision 1 was changed in place
}
