package resource_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

type volumeSpec struct{ SizeGiB int }

type volumeStatus struct{ AttachedTo string }

type volume = resource.Resource[volumeSpec, volumeStatus]

func Example_resource() {
	ctx := context.Background()
	s := store.NewMemory[*volume]()

	// A user declares the desired state.
	obj, err := resource.PutSpec(ctx, s, "volumes/data", volumeSpec{SizeGiB: 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("after create: generation %d, observed %d\n", obj.Value.Generation, obj.Value.ObservedGeneration)

	// The controller reconciles obj and records what it saw.
	obj, err = resource.WriteStatus(ctx, s, obj, volumeStatus{AttachedTo: "node-1"},
		resource.Condition{Type: "Ready", Status: resource.ConditionTrue, Reason: "Attached"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ready, _ := resource.FindCondition(obj.Value.Conditions, "Ready")
	fmt.Printf("after status: generation %d, observed %d, Ready=%s (%s)\n",
		obj.Value.Generation, obj.Value.ObservedGeneration, ready.Status, ready.Reason)

	// The user grows the volume while the controller works on the old spec.
	grown, err := resource.PutSpec(ctx, s, "volumes/data", volumeSpec{SizeGiB: 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("after resize: generation %d, observed %d\n", grown.Value.Generation, grown.Value.ObservedGeneration)

	// The status of the old version is refused: the new one gets reconciled.
	_, err = resource.WriteStatus(ctx, s, obj, volumeStatus{AttachedTo: "node-2"})
	fmt.Println("stale status write conflicts:", errors.Is(err, store.ErrConflict))

	// Output:
	// after create: generation 1, observed 0
	// after status: generation 1, observed 1, Ready=True (Attached)
	// after resize: generation 2, observed 1
	// stale status write conflicts: true
}

func ExampleSetCondition() {
	start := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	steps := []resource.Condition{
		{Type: "Ready", Status: resource.ConditionFalse, Reason: "Pulling"},
		{Type: "Ready", Status: resource.ConditionFalse, Reason: "Starting"}, // same status
		{Type: "Ready", Status: resource.ConditionTrue, Reason: "Running"},   // a transition
	}
	var conds []resource.Condition
	for i, c := range steps {
		now := start.Add(time.Duration(i) * time.Minute)
		conds = resource.SetCondition(conds, c, now)
		ready, _ := resource.FindCondition(conds, "Ready")
		fmt.Printf("at +%v: Ready=%s (%s) since +%v\n", now.Sub(start), ready.Status, ready.Reason, ready.LastTransitionTime.Sub(start))
	}
	// Output:
	// at +0s: Ready=False (Pulling) since +0s
	// at +1m0s: Ready=False (Starting) since +0s
	// at +2m0s: Ready=True (Running) since +2m0s
}
