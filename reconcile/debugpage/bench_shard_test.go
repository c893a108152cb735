package debugpage_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/debugpage"
	"github.com/converge-go/converge/reconcile/shard"
	"github.com/converge-go/converge/store"
)

// BenchmarkShardPage renders the page of a controller sharded by a real
// replica owning 1,024 buckets (shard.DefaultBuckets) and no keys: what
// the shard section costs (the replica's Status, Health's ownerless
// buckets, the table of 1,024 rows). The figure is in the package
// documentation.
func BenchmarkShardPage(b *testing.B) {
	raw := store.NewMemory[[]byte]()
	rep, err := shard.New(raw, shard.Options{ID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	all := make(chan struct{})
	var once sync.Once
	cancel := rep.Subscribe(func(func(string) bool, int64) {
		if rep.Status().Owned == shard.DefaultBuckets {
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
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { rep.Run(ctx) })
	wg.Go(func() { c.Run(ctx) })
	defer func() { stop(); wg.Wait() }()
	select {
	case <-all:
	case <-time.After(time.Minute):
		b.Fatal("the replica did not take every bucket within a minute")
	}
	h := debugpage.New(debugpage.Options{}, c)
	for _, format := range []string{"html", "json"} {
		b.Run(format, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/?format="+format, nil)
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code, rec.Body.String())
				}
			}
		})
	}
}
