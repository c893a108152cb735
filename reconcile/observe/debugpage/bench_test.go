//go:build unix

package debugpage_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/converge-go/converge/internal/cputime"
	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
)

// BenchmarkPage renders the first page of a controller over 100,000 keys:
// 90,000 converged and 10,000 failing, backing off (delayed in the queue),
// sorted by the oldest pending change (the order that must look at every
// key). The figure is in the package documentation.
func BenchmarkPage(b *testing.B) {
	const n = 100_000
	values := make(map[string]string, n)
	for i := range n {
		v := "ok"
		if i%10 == 0 {
			v = fmt.Sprintf("fail:error number %d", i)
		}
		values[fmt.Sprintf("tenant-%02d/object-%06d", i%50, i)] = v
	}
	w := newWorld(b, "bench", 2, values)
	defer w.close()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for w.calls.Load() < n {
		<-tick.C
	}
	benchmarkPage(b, w)
}

// BenchmarkPageAllQueued renders the first page of a controller whose
// 100,000 keys are all queued, never reconciled (an initial list behind a
// blocked worker): the walk over the queue's keys, each looked up once in
// the controller's pending changes, dominates.
func BenchmarkPageAllQueued(b *testing.B) {
	const n = 100_000
	values := make(map[string]string, n)
	for i := range n {
		values[fmt.Sprintf("tenant-%02d/object-%06d", i%50, i)] = "ok"
	}
	values["0-first/block"] = "block" // listed first: the one worker blocks on it
	w := newWorld(b, "bench", 1, values)
	defer w.close()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for w.c.Inspect(reconcile.KeyQuery{}).States[queue.Processing] == 0 {
		<-tick.C
	}
	benchmarkPage(b, w)
}

// BenchmarkPageAllQueuedAfterChanges is BenchmarkPageAllQueued for keys
// queued again after they converged: every one of 100,000 reconciled keys
// changes, in no particular order, behind a blocked worker. The queue's
// records are recycled ones, so a walk in hand-out order no longer reads
// them in the order they lie in memory, nor the controller's records of
// the keys (made by the initial list, in key order), as the changes
// arrive in the order they were written: the worst case of the page.
func BenchmarkPageAllQueuedAfterChanges(b *testing.B) {
	const n = 100_000
	values := make(map[string]string, n)
	for i := range n {
		values[fmt.Sprintf("tenant-%02d/object-%06d", i%50, i)] = "ok"
	}
	values["0-first/block"] = "ok"
	w := newWorld(b, "bench", 1, values)
	defer w.close()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for w.calls.Load() < n+1 {
		<-tick.C
	}
	ctx := context.Background()
	update := func(key, value string) {
		obj, err := w.s.Get(ctx, key)
		if err == nil {
			_, err = w.s.Update(ctx, key, value, obj.Revision)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	update("0-first/block", "block")
	for w.c.Inspect(reconcile.KeyQuery{}).States[queue.Processing] == 0 {
		<-tick.C
	}
	for key := range values { // map order: no particular order
		if key != "0-first/block" {
			update(key, "changed")
		}
	}
	for w.c.Inspect(reconcile.KeyQuery{}).States[queue.Waiting] < n {
		<-tick.C
	}
	benchmarkPage(b, w)
}

func benchmarkPage(b *testing.B, w *world) {
	h := debugpage.New(debugpage.Options{IsLeader: func() bool { return true }}, w.c)
	for _, format := range []string{"html", "json"} {
		b.Run(format, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/?sort=pending&format="+format, nil)
			cpu := cputime.Process()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code, rec.Body.String())
				}
			}
			// CPU time per page, of the whole process (the idle
			// controller's included): what a page costs when the machine
			// is shared, where ns/op counts the waits for a core too.
			b.ReportMetric(float64(cputime.Process()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
