package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/prune"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// demo tells the story, checking each step's outcome.
func (op *operator) demo(ctx context.Context, out io.Writer) error {
	step := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	for _, name := range []string{"web-1", "web-2"} {
		if err := op.put(ctx, name, 1); err != nil {
			return err
		}
	}
	step("create web-1 and web-2 (size 1): %s", op.summary(ctx))

	op.api.loseNextAnswer()
	if err := op.put(ctx, "db-1", 4); err != nil {
		return err
	}
	posts, n := op.api.counts()
	step("create db-1, the answer to its POST lost: found by its tag and adopted: %d POSTs, %d VMs: %s", posts, n, op.summary(ctx))
	if posts != 3 || n != 3 {
		return fmt.Errorf("want 3 POSTs and 3 VMs, got %d and %d", posts, n)
	}

	if err := op.put(ctx, "web-1", 2); err != nil {
		return err
	}
	step("resize web-1 to 2: %s", op.summary(ctx))

	gone := op.record(ctx, "web-2").Name
	op.api.remove(gone)
	if err := op.until(ctx, func() bool { r := op.record(ctx, "web-2"); return r.Name != "" && r.Name != gone }); err != nil {
		return err
	}
	step("%s (web-2) deleted by hand: put back by the next poll: %s", gone, op.summary(ctx))

	if err := op.delete(ctx, "db-1"); err != nil {
		return err
	}
	step("delete db-1: its VM deleted by the finalizer: %s", op.summary(ctx))

	if err := op.orphan(ctx); err != nil {
		return err
	}
	pass, err := op.p.Prune(ctx)
	if err != nil || len(pass.Pruned) != 1 {
		return fmt.Errorf("prune: %v (pruned %v)", err, pass.Pruned)
	}
	step("a VM tagged for vms/old, which nobody wants: pruned: %s", op.summary(ctx))
	return nil
}

// put writes name's spec and waits until its VM is ready.
func (op *operator) put(ctx context.Context, name string, size int) error {
	if _, err := resource.PutSpec(ctx, op.s, "vms/"+name, VMSpec{Size: size}); err != nil {
		return err
	}
	return op.until(ctx, func() bool {
		obj, err := op.s.Get(ctx, "vms/"+name)
		if err != nil {
			return false
		}
		c, _ := resource.FindCondition(obj.Value.Conditions, external.ConditionReady)
		return c.Status == resource.ConditionTrue && obj.Value.Status.Size == size && obj.Value.ObservedGeneration == obj.Value.Generation
	})
}

// delete deletes name and waits until it is gone.
func (op *operator) delete(ctx context.Context, name string) error {
	obj, err := op.s.Get(ctx, "vms/"+name)
	if err != nil {
		return err
	}
	if _, err := op.s.Delete(ctx, obj.Key, obj.Revision); err != nil {
		return err
	}
	return op.until(ctx, func() bool { _, err := op.s.Get(ctx, obj.Key); return err != nil })
}

// orphan makes, through the API, a VM tagged by this operator for a key
// the store does not hold, as an operator that crashed would leave.
func (op *operator) orphan(ctx context.Context) error {
	id, err := op.s.(store.Identifier).Identity(ctx)
	if err != nil {
		return err
	}
	m := external.Mark{Mark: prune.Mark{Owner: owner, Store: id}, Key: "vms/old", Create: "lost"}
	op.api.mu.Lock()
	defer op.api.mu.Unlock()
	op.api.next++
	vmID := fmt.Sprintf("vm-%d", op.api.next)
	op.api.vms[vmID] = apiVM{ID: vmID, Size: 1, Tags: map[string]string{tagOwner: owner, tagMark: m.String()}}
	return nil
}

// record returns name's external record.
func (op *operator) record(ctx context.Context, name string) external.Record {
	obj, err := op.s.Get(ctx, "vms/"+name)
	if err != nil {
		return external.Record{}
	}
	return obj.Value.Status.External
}

// summary lists the VMs as the API has them.
func (op *operator) summary(context.Context) string {
	op.api.mu.Lock()
	defer op.api.mu.Unlock()
	s := ""
	for i := 1; i <= op.api.next; i++ {
		if vm, ok := op.api.vms[fmt.Sprintf("vm-%d", i)]; ok {
			m, _ := external.ParseMark(vm.Tags[tagMark])
			s += fmt.Sprintf(" %s(%s, size %d)", vm.ID, m.Key, vm.Size)
		}
	}
	return "VMs:" + s
}

// until polls cond every 20ms until it holds or ctx ends.
func (op *operator) until(ctx context.Context, cond func() bool) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
