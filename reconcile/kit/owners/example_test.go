package owners_test

import (
	"context"
	"fmt"
	"slices"

	"github.com/converge-go/converge/reconcile/kit/owners"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// object is what the example's store holds: a ReplicaSet and its Pods.
type object = resource.Resource[objectSpec, struct{}]

type objectSpec struct {
	Replicas int    `json:",omitempty"`
	Image    string `json:",omitempty"`
}

// A ReplicaSet owns two Pods that block its deletion. Deleted in the
// foreground, it stays, marked, until the collector has deleted its Pods;
// then it goes.
func ExampleCollector() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mem := store.NewMemory[*object]()
	defer mem.Close()
	kind := resource.Kind[objectSpec, struct{}]{}
	s, err := apistore.New[*object](mem, kind)
	if err != nil {
		fmt.Println(err)
		return
	}
	gc, err := owners.NewCollector[*object](s, kind, owners.CollectorOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error, 1)
	go func() { done <- gc.Run(ctx) }() // a manager.Manager would run it
	if err := gc.WaitForSync(ctx); err != nil {
		fmt.Println(err)
		return
	}

	rs, err := s.Create(ctx, "replicasets/web", &object{Spec: objectSpec{Replicas: 2}})
	if err != nil {
		fmt.Println(err)
		return
	}
	ref := apistore.Owner{Key: rs.Key, UID: rs.CreateRevision, Block: true}
	for i := range 2 {
		pod := &object{Meta: apistore.Meta{Owners: []apistore.Owner{ref}}, Spec: objectSpec{Image: "web:1"}}
		if _, err := s.Create(ctx, fmt.Sprintf("pods/web-%d", i), pod); err != nil {
			fmt.Println(err)
			return
		}
	}

	rev, err := s.Revision(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	watch, err := s.Watch(ctx, "", rev)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer watch.Stop()
	_, marked, err := s.DeleteWith(ctx, rs.Key, rs.Revision, apistore.Foreground)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("replicasets/web marked:", marked)
	var first []string // the keys deleted before the ReplicaSet
	for ev := range watch.Events() {
		if ev.Type != store.Deleted {
			continue
		}
		if ev.Object.Key == rs.Key {
			break
		}
		first = append(first, ev.Object.Key)
	}
	slices.Sort(first)
	fmt.Println("deleted first:", first)
	fmt.Println("then replicasets/web")
	cancel()
	fmt.Println("collector stopped:", <-done)
	// Output:
	// replicasets/web marked: true
	// deleted first: [pods/web-0 pods/web-1]
	// then replicasets/web
	// collector stopped: <nil>
}
