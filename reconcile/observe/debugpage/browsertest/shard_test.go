package browsertest

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/shard"
	"github.com/converge-go/converge/reconcile/shard/shardtest"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
)

// shardBuckets is the bucket count of the sharded scene: few enough that
// the page shows the table unfolded.
const shardBuckets = 16

// serveSharded runs two shard replicas, a and b, over one memory store,
// and a Manager serving the page over a controller sharded by a (the
// assigner). It returns the page's URL and the replicas once each owns
// half the buckets.
func serveSharded(t *testing.T) (base string, a, b *shardtest.Replica) {
	raw := store.NewMemory[[]byte]()
	rs := shardtest.StartEach(t, raw, shard.Options{Buckets: shardBuckets, TTL: time.Second}, "a", "b")
	a, b = rs[0], rs[1]
	t.Cleanup(func() {
		b.Stop()
		a.Stop()
	})
	c, err := reconcile.New(store.NewView[string](raw, nil), reconcile.ReconcilerFunc[string](
		func(context.Context, reconcile.Request[string]) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		}),
		reconcile.Options[string]{Name: "items", Prefix: "items/", Shard: a.Replica})
	if err != nil {
		t.Fatal(err)
	}
	base = mount(t, c, nil)
	eventually(t, "each replica owns half the buckets", func() (bool, string) {
		sa, sb := a.Status(), b.Status()
		return sa.Owned == shardBuckets/2 && sb.Owned == shardBuckets/2 && len(sa.Ownerless) == 0,
			"a owns " + strconv.Itoa(sa.Owned) + ", b " + strconv.Itoa(sb.Owned)
	})
	return base, a, b
}

// ownerless reads the page's JSON: the shard section's ownerless buckets.
func ownerless(url string) ([]int, error) {
	resp, err := http.Get(url + "?format=json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var page struct {
		Controllers []struct {
			Shard struct{ Ownerless []int }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		return nil, err
	}
	if len(page.Controllers) != 1 {
		return nil, nil
	}
	return page.Controllers[0].Shard.Ownerless, nil
}

// bucketRow is a bucket's row as a person reads it, with the background
// the browser paints it.
type bucketRow struct{ Bucket, Owner, Epoch, Moves, Target, State, Background string }

func bucketRows(t *testing.T, ctx context.Context) []bucketRow {
	t.Helper()
	const js = `Array.from(document.querySelectorAll('section.controller .shard tr.bucket')).map(r =>
		['bucket', 'owner', 'epoch', 'moves', 'target', 'state'].map(c => r.querySelector('td.' + c).innerText.trim())
			.concat([getComputedStyle(r.querySelector('td.owner')).backgroundColor]))`
	cells, err := run(ctx, chromedp.Evaluate[[][]string](js))
	if err != nil {
		t.Fatalf("reading the bucket table: %v", err)
	}
	out := make([]bucketRow, len(cells))
	for i, c := range cells {
		out[i] = bucketRow{c[0], c[1], c[2], c[3], c[4], c[5], c[6]}
	}
	return out
}

// TestAPersonSeesEachBucketsOwnerAndTheBucketsACrashedReplicaLeftOwnerless:
// in a real browser, the shard table of a sharded controller shows every
// bucket's owner and epoch; after the other replica crashes (and while the
// assigner's writes of owner records are refused, so that the takeover
// waits for the test) its buckets are highlighted as ownerless, still
// naming it, and named above the table; once the takeover is let through,
// the page shows them owned by this replica and says every bucket has an
// owner.
func TestAPersonSeesEachBucketsOwnerAndTheBucketsACrashedReplicaLeftOwnerless(t *testing.T) {
	ctx := browser(t)
	base, a, b := serveSharded(t)

	do(t, ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`.shard table.buckets`)))
	if got := text(t, ctx, `section.controller .health`); !strings.Contains(got, "synced: yes") || !strings.Contains(got, "store: ok") {
		t.Errorf("the controller's health reads %q, want synced and its store ok", got)
	}
	if got := text(t, ctx, `.shard .replica`); got != "a" {
		t.Errorf("the shard section names replica %q, want a", got)
	}
	rows := bucketRows(t, ctx)
	if len(rows) != shardBuckets {
		t.Fatalf("the shard table shows %d buckets, want %d", len(rows), shardBuckets)
	}
	owners := map[string]int{}
	for _, r := range rows {
		owners[r.Owner]++
		if r.Epoch == "" || (r.Owner == "a") != (r.State == "mine") {
			t.Errorf("bucket row %+v: want an epoch, and state mine exactly for a's buckets", r)
		}
	}
	if owners["a"] != shardBuckets/2 || owners["b"] != shardBuckets/2 {
		t.Errorf("owners shown %v, want half a, half b", owners)
	}

	// b crashes; a (the assigner) cannot write owner records for now.
	a.Faults().SetPlan(func(c faultstore.Call) faultstore.Decision {
		if c.Op&faultstore.OpWrites != 0 && strings.HasPrefix(c.Key, shard.DefaultPrefix+"owner/") {
			return faultstore.Decision{Fault: faultstore.Fail}
		}
		return faultstore.Decision{}
	})
	b.Crash()
	eventually(t, "b's buckets are ownerless", func() (bool, string) {
		got, err := ownerless(base)
		if err != nil {
			return false, err.Error()
		}
		return len(got) == shardBuckets/2, "ownerless: " + strconv.Itoa(len(got))
	})
	do(t, ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`.shard div.ownerless`)))
	if got := text(t, ctx, `.shard div.ownerless`); !strings.HasPrefix(got, "ownerless buckets (8):") {
		t.Errorf("above the table: %q, want the 8 ownerless buckets named", got)
	}
	var shown, highlighted int
	var plain string
	for _, r := range bucketRows(t, ctx) {
		switch r.State {
		case "ownerless":
			shown++
			if r.Owner != "b" {
				t.Errorf("ownerless bucket %s shows owner %q, want the crashed b", r.Bucket, r.Owner)
			}
			if r.Background == "rgb(253, 231, 234)" {
				highlighted++
			}
		case "mine":
			plain = r.Background
		}
	}
	if shown != shardBuckets/2 || highlighted != shown || plain == "rgb(253, 231, 234)" {
		t.Errorf("%d ownerless rows shown, %d highlighted (a's own rows painted %s); want %d, all highlighted, a's not",
			shown, highlighted, plain, shardBuckets/2)
	}
	if path := os.Getenv("CONVERGE_SHARD_SCREENSHOT"); path != "" {
		png, err := run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot of the ownerless buckets written to %s (CONVERGE_SHARD_SCREENSHOT)", path)
	}

	// The takeover goes through: every bucket is a's again.
	a.Faults().SetPlan(nil)
	eventually(t, "the takeover", func() (bool, string) {
		got, err := ownerless(base)
		if err != nil {
			return false, err.Error()
		}
		return len(got) == 0 && a.Status().Owned == shardBuckets, "ownerless: " + strconv.Itoa(len(got))
	})
	do(t, ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`.shard .ownerless-none`)))
	for _, r := range bucketRows(t, ctx) {
		if r.Owner != "a" || r.State != "mine" {
			t.Errorf("after the takeover bucket row %+v, want owner a, mine", r)
		}
	}
}
