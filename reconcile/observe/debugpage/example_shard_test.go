package debugpage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
	"github.com/converge-go/converge/reconcile/shard"
	"github.com/converge-go/converge/store"
)

// A sharded controller's page has a shard section: this replica, its
// buckets' owners, epochs and moves, and the ownerless ones (none here:
// the only replica owns every bucket).
func ExampleHandler_shard() {
	raw := store.NewMemory[[]byte]()
	rep, err := shard.New(raw, shard.Options{ID: "replica-1", Buckets: 4, TTL: time.Second})
	if err != nil {
		panic(err)
	}
	all := make(chan struct{})
	var once sync.Once
	cancel := rep.Subscribe(func(func(string) bool, int64) {
		if rep.Status().Owned == 4 {
			once.Do(func() { close(all) })
		}
	})
	defer cancel()
	c, err := reconcile.New(store.NewView[string](raw, nil), reconcile.ReconcilerFunc[string](
		func(context.Context, reconcile.Request[string]) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		}),
		reconcile.Options[string]{Name: "items", Prefix: "items/", Shard: rep})
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { rep.Run(ctx) })
	wg.Go(func() { c.Run(ctx) })
	<-all

	rec := httptest.NewRecorder()
	debugpage.New(debugpage.Options{}, c).ServeHTTP(rec, httptest.NewRequest("GET", "/debug/converge/?format=json", nil))
	var page struct {
		Controllers []struct {
			Shard struct {
				Replica   string
				Owned     int
				Ownerless []int
				Buckets   []struct {
					Bucket       int
					Owner, State string
					Epoch        int64
				}
			}
		}
	}
	json.Unmarshal(rec.Body.Bytes(), &page)
	s := page.Controllers[0].Shard
	fmt.Println("replica:", s.Replica, "owns:", s.Owned, "ownerless:", s.Ownerless)
	for _, b := range s.Buckets {
		fmt.Println("bucket", b.Bucket, "owner", b.Owner, b.State, "epoch known:", b.Epoch > 0)
	}
	stop()
	wg.Wait()
	// Output:
	// replica: replica-1 owns: 4 ownerless: []
	// bucket 0 owner replica-1 mine epoch known: true
	// bucket 1 owner replica-1 mine epoch known: true
	// bucket 2 owner replica-1 mine epoch known: true
	// bucket 3 owner replica-1 mine epoch known: true
}
