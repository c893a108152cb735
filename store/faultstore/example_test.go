package faultstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
)

// Random faults at seeded rates, and a count of the writes that went
// through.
func ExampleNew() {
	ctx := context.Background()
	s, err := faultstore.New(store.NewMemory[string](), faultstore.Options{
		Rand:  rand.New(rand.NewPCG(42, 0)),
		Rates: faultstore.Rates{Error: 0.5},
	})
	if err != nil {
		panic(err)
	}
	var failed int
	for i := range 10 {
		if _, err := s.Create(ctx, fmt.Sprint("key-", i), "value"); errors.Is(err, faultstore.ErrNotSent) {
			failed++
		}
	}
	fmt.Println("writes that went through:", s.Writes(), "injected failures:", failed)
	// Output:
	// writes that went through: 3 injected failures: 7
}

// A loud outage fails every call and ends every watch; a silent one keeps
// watches open and quiet, and they catch up when it ends.
func ExampleStore_SetOutage() {
	ctx := context.Background()
	mem := store.NewMemory[string]()
	s, _ := faultstore.New(mem, faultstore.Options{})
	w, _ := s.Watch(ctx, "", 0)
	defer w.Stop()

	s.SetOutage(faultstore.Silent)
	_, err := s.Get(ctx, "a")
	fmt.Println("call during a silent outage:", errors.Is(err, store.ErrUnavailable))
	mem.Create(ctx, "a", "written by another client") // held back by the watch
	s.SetOutage(faultstore.Up)
	ev := <-w.Events()
	fmt.Println("after the outage:", ev.Type, ev.Object.Key)

	s.SetOutage(faultstore.Loud)
	for range w.Events() {
	}
	fmt.Println("watch during a loud outage:", errors.Is(w.Err(), store.ErrUnavailable))
	// Output:
	// call during a silent outage: true
	// after the outage: Created a
	// watch during a loud outage: true
}

// A script decides the next calls one by one: here a conflict, then a write
// applied whose response is lost.
func ExampleScript() {
	ctx := context.Background()
	mem := store.NewMemory[int]()
	obj, _ := mem.Create(ctx, "n", 1)
	s, _ := faultstore.New(mem, faultstore.Options{Plan: faultstore.Script(
		faultstore.Decision{Fault: faultstore.Conflict},
		faultstore.Decision{Fault: faultstore.Lose},
	)})
	_, err := s.Update(ctx, "n", 2, obj.Revision)
	fmt.Println("conflict:", errors.Is(err, store.ErrConflict))
	_, err = s.Update(ctx, "n", 2, obj.Revision)
	lost, _ := errors.AsType[*faultstore.LostResponseError[int]](err)
	got, _ := mem.Get(ctx, "n")
	fmt.Println("unavailable:", errors.Is(err, store.ErrUnavailable), "applied:", got.Value, "kept:", lost.Object.Value)
	// Output:
	// conflict: true
	// unavailable: true applied: 2 kept: 2
}
