package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/reconciletest"
	"github.com/converge-go/converge/reconcile/shard"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
)

// TestTheItemsControllerGoesIdleOnceConverged: a replica's controller,
// with the example's reconciler and its writes fenced by the bucket
// claims of a shard.Replica, records every item's generation once and
// then reconciles and writes nothing (reconciletest's CheckIdle), while
// the replica keeps its buckets.
func TestTheItemsControllerGoesIdleOnceConverged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := reconciletest.NewEnv(t)
		raw := store.NewMemory[[]byte]()
		t.Cleanup(func() { _ = raw.Close() })
		items := reconciletest.Wrap(env, store.Store[*Item](store.NewView[*Item](raw, nil)), faultstore.Options{})
		for i := range 20 {
			if _, err := items.Create(t.Context(), fmt.Sprintf("%s%05d", itemsPrefix, i), &Item{Generation: 1}); err != nil {
				t.Fatal(err)
			}
		}
		rep, err := shard.New(raw, shard.Options{ID: "r1", Prefix: shardPrefix, Buckets: 8, TTL: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		all := make(chan struct{})
		var once sync.Once
		defer rep.Subscribe(func(func(string) bool, int64) {
			if rep.Status().Owned == 8 {
				once.Do(func() { close(all) })
			}
		})()
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- rep.Run(ctx) }()
		t.Cleanup(func() {
			stop()
			if err := <-done; err != nil {
				t.Errorf("replica: %v", err)
			}
		})
		<-all
		c, err := reconcile.New[*Item](items, itemReconciler{id: "r1"}, reconcile.Options[*Item]{
			Name: "items", Prefix: itemsPrefix, Shard: rep, Metrics: env.Metrics(),
		})
		if err != nil {
			t.Fatal(err)
		}
		env.Start(c)
		env.CheckIdle(time.Second, nil)
		objs, _, err := items.List(t.Context(), itemsPrefix)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range objs {
			if obj.Value.Observed != 1 || obj.Value.By != "r1" {
				t.Fatalf("%s: %+v, want generation 1 observed by r1", obj.Key, *obj.Value)
			}
		}
	})
}
