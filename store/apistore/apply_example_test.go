package apistore_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// A user applies a file that holds only the spec: the finalizer and the
// owner the controller set, and its status, stay. Applied to an object
// being deleted, it leaves the deletion to the controller's cleanup.
func ExampleStore_Apply() {
	ctx := context.Background()
	mem := store.NewMemory[json.RawMessage]()
	defer mem.Close()
	s, err := apistore.New[json.RawMessage](mem, apistore.JSONKind{})
	if err != nil {
		panic(err)
	}
	// What the controller left: its finalizer, an owner and a status.
	obj, err := s.Create(ctx, "backups/nightly-1", json.RawMessage(`{"metadata":{"finalizers":["backup/clean"],"owners":[{"key":"schedules/nightly","uid":1}]},"spec":{"db":"orders"},"status":{"done":true}}`))
	if err != nil {
		panic(err)
	}
	obj, err = s.Apply(ctx, "backups/nightly-1", json.RawMessage(`{"spec":{"db":"orders","keep":7}}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(string(obj.Value))

	if _, err := s.Delete(ctx, "backups/nightly-1", obj.Revision); err != nil {
		panic(err)
	}
	obj, err = s.Apply(ctx, "backups/nightly-1", json.RawMessage(`{"metadata":{"finalizers":[]},"spec":{"db":"orders","keep":7}}`))
	if err != nil {
		panic(err)
	}
	m, err := s.Kind().Meta(obj.Value)
	if err != nil {
		panic(err)
	}
	fmt.Println("deleting:", m.Deleting(), "finalizers:", m.Finalizers)
	// Output:
	// {"metadata":{"generation":2,"finalizers":["backup/clean"],"owners":[{"key":"schedules/nightly","uid":1}]},"spec":{"db":"orders","keep":7},"status":{"done":true}}
	// deleting: true finalizers: [backup/clean]
}
