package apistore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// A finalizer holds an object back until its cleanup is done: the delete
// marks it, the controller cleans up and removes its finalizer, and that
// write deletes the object.
func Example_finalizers() {
	ctx := context.Background()
	mem := store.NewMemory[json.RawMessage]()
	defer mem.Close()
	s, err := apistore.New[json.RawMessage](mem, apistore.JSONKind{})
	if err != nil {
		panic(err)
	}
	obj, err := s.Create(ctx, "dbs/orders", json.RawMessage(`{"metadata":{"finalizers":["db/drop"]},"spec":{"size":"10G"}}`))
	if err != nil {
		panic(err)
	}

	// A user deletes the object: it has a finalizer, so it is marked.
	rev, marked, err := s.DeleteWith(ctx, "dbs/orders", obj.Revision, apistore.Background)
	if err != nil {
		panic(err)
	}
	obj, err = s.Get(ctx, "dbs/orders")
	if err != nil {
		panic(err)
	}
	m, err := s.Kind().Meta(obj.Value)
	if err != nil {
		panic(err)
	}
	fmt.Println("marked:", marked, "deleting:", m.Deleting(), "finalizers:", m.Finalizers, "at the mark's revision:", obj.Revision == rev)

	// The controller sees it deleting, drops the database, then removes
	// its finalizer: the last one, so the object goes in the same write.
	_, deleted, err := s.Replace(ctx, "dbs/orders", json.RawMessage(`{"spec":{"size":"10G"}}`), obj.Revision)
	if err != nil {
		panic(err)
	}
	_, err = s.Get(ctx, "dbs/orders")
	fmt.Println("deleted:", deleted, "gone:", errors.Is(err, store.ErrNotFound))
	// Output:
	// marked: true deleting: true finalizers: [db/drop] at the mark's revision: true
	// deleted: true gone: true
}

// Spec writes bump the generation only when the spec changes, and status
// writes never touch it or the spec.
func ExampleStore_UpdateStatus() {
	ctx := context.Background()
	mem := store.NewMemory[json.RawMessage]()
	defer mem.Close()
	s, err := apistore.New[json.RawMessage](mem, apistore.JSONKind{})
	if err != nil {
		panic(err)
	}
	obj, err := s.Create(ctx, "apps/web", json.RawMessage(`{"spec":{"replicas":3}}`))
	if err != nil {
		panic(err)
	}
	obj, err = s.Update(ctx, "apps/web", json.RawMessage(`{"spec":{"replicas":5}}`), obj.Revision)
	if err != nil {
		panic(err)
	}
	obj, err = s.UpdateStatus(ctx, "apps/web", json.RawMessage(`{"spec":{"replicas":1},"status":{"ready":5}}`), obj.Revision)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(obj.Value))
	// Output:
	// {"metadata":{"generation":2},"spec":{"replicas":5},"status":{"ready":5}}
}
