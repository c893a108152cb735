package debugpage_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
	"github.com/converge-go/converge/reconcile/shard"
	"github.com/converge-go/converge/reconcile/shard/shardtest"
	"github.com/converge-go/converge/store"
)

// BenchmarkShardPage renders the page of a controller sharded by a real
// replica owning 1,024 buckets (shard.DefaultBuckets) and no keys: what
// the shard section costs (the replica's Status, Health's ownerless
// buckets, the table of 1,024 rows). The figure is in the package
// documentation.
func BenchmarkShardPage(b *testing.B) {
	raw := store.NewMemory[[]byte]()
	rep := shardtest.StartEach(b, raw, shard.Options{}, "bench")[0]
	defer rep.Stop()
	c, err := reconcile.New(store.NewView[string](raw, nil), reconcile.ReconcilerFunc[string](
		func(context.Context, reconcile.Request[string]) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		}),
		reconcile.Options[string]{Name: "items", Prefix: "items/", Shard: rep.Replica})
	if err != nil {
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { stop(); <-done }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(time.Minute); rep.Status().Owned < shard.DefaultBuckets; <-tick.C {
		if time.Now().After(end) {
			b.Fatal("the replica did not take every bucket within a minute")
		}
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
