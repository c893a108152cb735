package debugpage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
	"github.com/converge-go/converge/reconcile/shard"
	"github.com/converge-go/converge/reconcile/shard/shardtest"
	"github.com/converge-go/converge/store"
)

// statusSharder is a Sharder that owns nothing and reports a fixed Status
// (and its ownerless buckets, as shard.Replica does).
type statusSharder struct{ st shard.Status }

func (s statusSharder) Claim(string) (reconcile.Claim, bool) { return reconcile.Claim{}, false }
func (s statusSharder) Subscribe(func(func(string) bool, int64)) func() {
	return func() {}
}
func (s statusSharder) Status() shard.Status { return s.st }
func (s statusSharder) Ownerless() []int     { return s.st.Ownerless }
func (s statusSharder) RecordPrefix() string { return "" }

// ownerlessSharder reports its ownerless buckets but has no Status.
type ownerlessSharder struct{ st shard.Status }

func (s ownerlessSharder) Claim(string) (reconcile.Claim, bool) { return reconcile.Claim{}, false }
func (s ownerlessSharder) Subscribe(func(func(string) bool, int64)) func() {
	return func() {}
}
func (s ownerlessSharder) Ownerless() []int     { return s.st.Ownerless }
func (s ownerlessSharder) RecordPrefix() string { return "" }

// withSharder runs f with a page over a controller whose Sharder reports
// st.
func withSharder(t *testing.T, st shard.Status, f func(t *testing.T, h *debugpage.Handler)) {
	withSharderOf(t, statusSharder{st}, f)
}

// withSharderOf runs f with a page over a controller sharded by s.
func withSharderOf(t *testing.T, s reconcile.Sharder, f func(t *testing.T, h *debugpage.Handler)) {
	synctest.Test(t, func(t *testing.T) {
		c, err := reconcile.New(store.NewMemory[string](), reconcile.ReconcilerFunc[string](
			func(context.Context, reconcile.Request[string]) (reconcile.Result, error) {
				return reconcile.Result{}, nil
			}),
			reconcile.Options[string]{Name: "items", Shard: s})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		require.NoError(t, c.WaitForSync(ctx))
		f(t, debugpage.New(debugpage.Options{}, c))
		cancel()
		require.NoError(t, <-done)
	})
}

// sixBuckets has a bucket in every state: 0 mine, 1 releasing to r2, 2
// owned by r2, 3 without a record and 4 of a dead replica (both
// ownerless), 5 owned by r2 and planned for r1 (moving). An owner's name
// carries markup.
var sixBuckets = shard.Status{
	ID: "r1", Member: true, Term: 7, Assigner: true, Owned: 2, Members: []string{"r1", "r2"},
	Ownerless: []int{3, 4},
	Buckets: []shard.BucketStatus{
		{Bucket: 0, Owner: "r1", Epoch: 10, Target: "r1", Mine: true},
		{Bucket: 1, Owner: "r1", Epoch: 11, Moves: 2, Target: "r2", Mine: true, Releasing: true},
		{Bucket: 2, Owner: "r2", Epoch: 12, Moves: 1, Target: "r2"},
		{Bucket: 3, Target: "r2"},
		{Bucket: 4, Owner: "<i>dead</i>", Epoch: 9, Moves: 3, Target: "r2"},
		{Bucket: 5, Owner: "r2", Epoch: 13, Moves: 1, Target: "r1"},
	},
}

// shardJSON is the shard section of the page's JSON, as a tool reads it.
type shardJSON struct {
	Synced    bool
	Degraded  []string
	Ownerless []int
	Shard     *struct {
		Replica   string
		Member    bool
		Term      int64
		Assigner  bool
		Owned     int
		Count     int
		Members   []map[string]any
		Ownerless []int
		States    map[string]int
		Buckets   []map[string]any
	}
}

func getShard(t *testing.T, h *debugpage.Handler) shardJSON {
	t.Helper()
	var p struct{ Controllers []shardJSON }
	require.NoError(t, json.Unmarshal(get(t, h, "/?format=json").Body.Bytes(), &p))
	require.Len(t, p.Controllers, 1)
	return p.Controllers[0]
}

func TestShardJSONGivesEveryBucketsOwnerEpochMovesAndStateByName(t *testing.T) {
	withSharder(t, sixBuckets, func(t *testing.T, h *debugpage.Handler) {
		c := getShard(t, h)
		assert.Equal(t, []int{3, 4}, c.Ownerless, "Health.Ownerless")
		s := c.Shard
		require.NotNil(t, s)
		assert.Equal(t, "r1", s.Replica)
		assert.True(t, s.Member)
		assert.EqualValues(t, 7, s.Term)
		assert.True(t, s.Assigner)
		assert.Equal(t, 2, s.Owned)
		assert.Equal(t, 6, s.Count)
		assert.Equal(t, []int{3, 4}, s.Ownerless)
		assert.Equal(t, map[string]int{"mine": 1, "releasing": 1, "owned": 1, "ownerless": 2, "moving": 1}, s.States)
		assert.Equal(t, []map[string]any{
			{"id": "<i>dead</i>", "buckets": 1.0, "inPlan": false},
			{"id": "r1", "buckets": 2.0, "inPlan": true, "self": true},
			{"id": "r2", "buckets": 2.0, "inPlan": true},
		}, s.Members)
		require.Len(t, s.Buckets, 6)
		assert.Equal(t, map[string]any{"bucket": 0.0, "owner": "r1", "epoch": 10.0, "moves": 0.0, "target": "r1", "state": "mine"}, s.Buckets[0])
		assert.Equal(t, map[string]any{"bucket": 1.0, "owner": "r1", "epoch": 11.0, "moves": 2.0, "target": "r2", "state": "releasing"}, s.Buckets[1])
		assert.Equal(t, map[string]any{"bucket": 2.0, "owner": "r2", "epoch": 12.0, "moves": 1.0, "target": "r2", "state": "owned"}, s.Buckets[2])
		assert.Equal(t, map[string]any{"bucket": 3.0, "moves": 0.0, "target": "r2", "state": "ownerless"}, s.Buckets[3])
		assert.Equal(t, map[string]any{"bucket": 4.0, "owner": "<i>dead</i>", "epoch": 9.0, "moves": 3.0, "target": "r2", "state": "ownerless"}, s.Buckets[4])
		assert.Equal(t, map[string]any{"bucket": 5.0, "owner": "r2", "epoch": 13.0, "moves": 1.0, "target": "r1", "state": "moving"}, s.Buckets[5])
	})
}

func TestShardHTMLHighlightsOwnerlessBucketsAndEscapesNames(t *testing.T) {
	withSharder(t, sixBuckets, func(t *testing.T, h *debugpage.Handler) {
		body := get(t, h, "/").Body.String()
		for _, want := range []string{
			`<code class="replica">r1</code>`,
			`term <span class="shard-term">7</span>`,
			`<span class="assigner">yes</span>`,
			`owns: <span class="owned">2</span> of 6 buckets`,
			`<code>&lt;i&gt;dead&lt;/i&gt;</code> 1 <b class="bad">not in the plan</b>`,
			`<code>r1</code> 2 (this replica)`,
			`ownerless buckets (2): <span class="ownerless-bucket">3</span> <span class="ownerless-bucket">4</span>`,
			`<details class="buckets" open>`,
			`<summary>6 buckets: ownerless 2 releasing 1 mine 1 moving 1 owned 1</summary>`,
			`<tr class="bucket ownerless" data-bucket="3"><td class="bucket">3</td><td class="owner"></td><td class="epoch"></td><td class="moves">0</td><td class="target">r2</td><td class="state">ownerless</td></tr>`,
			`<tr class="bucket ownerless" data-bucket="4"><td class="bucket">4</td><td class="owner">&lt;i&gt;dead&lt;/i&gt;</td><td class="epoch">9</td><td class="moves">3</td>`,
			`<tr class="bucket releasing" data-bucket="1"><td class="bucket">1</td><td class="owner">r1</td><td class="epoch">11</td><td class="moves">2</td><td class="target">r2</td>`,
		} {
			assert.Contains(t, body, want)
		}
		assert.NotContains(t, body, "<i>dead</i>", "a replica's name is text, never markup")
		assert.NotContains(t, body, `class="ownerless-none"`)
		assert.Equal(t, 1, strings.Count(body, `class="bad ownerless"`), "the ownerless buckets are named once, in the shard section")
	})
}

// TestASharderWithoutStatusStillHasItsOwnerlessBucketsNamed: a Sharder
// that reports ownerless buckets (Sharder.Ownerless) but has no
// Status gets no shard section, and its ownerless buckets are named in
// the controller's health, in HTML and JSON.
func TestASharderWithoutStatusStillHasItsOwnerlessBucketsNamed(t *testing.T) {
	withSharderOf(t, ownerlessSharder{sixBuckets}, func(t *testing.T, h *debugpage.Handler) {
		body := get(t, h, "/").Body.String()
		assert.Contains(t, body, `<div class="bad ownerless">ownerless buckets (2): 3 4</div>`)
		assert.NotContains(t, body, `class="shard"`)
		c := getShard(t, h)
		assert.Equal(t, []int{3, 4}, c.Ownerless)
		assert.Nil(t, c.Shard)
	})
}

// TestAThousandBucketsAreFoldedUnderTheirSummaryAndAllInTheJSON: with
// 1,024 buckets the table is folded (a closed details element) under a
// summary counting the states, while the ownerless ones are named above
// it; the JSON lists every bucket.
func TestAThousandBucketsAreFoldedUnderTheirSummaryAndAllInTheJSON(t *testing.T) {
	st := shard.Status{ID: "r1", Member: true, Term: 3, Members: []string{"r1"}, Owned: 1023, Ownerless: []int{77}}
	for b := range shard.DefaultBuckets {
		bs := shard.BucketStatus{Bucket: b, Owner: "r1", Epoch: int64(100 + b), Target: "r1", Mine: true}
		if b == 77 {
			bs = shard.BucketStatus{Bucket: b, Target: "r1"}
		}
		st.Buckets = append(st.Buckets, bs)
	}
	withSharder(t, st, func(t *testing.T, h *debugpage.Handler) {
		body := get(t, h, "/").Body.String()
		assert.Contains(t, body, `<details class="buckets">`)
		assert.NotContains(t, body, `<details class="buckets" open>`)
		assert.Contains(t, body, `<summary>1024 buckets: ownerless 1 mine 1023</summary>`)
		assert.Contains(t, body, `ownerless buckets (1): <span class="ownerless-bucket">77</span>`)
		assert.Equal(t, 1024, strings.Count(body, `<tr class="bucket `))
		s := getShard(t, h).Shard
		require.NotNil(t, s)
		assert.Len(t, s.Buckets, 1024)
		assert.Equal(t, "ownerless", s.Buckets[77]["state"])
		assert.Equal(t, 1123.0, s.Buckets[1023]["epoch"])
	})
}

func TestAControllerWithoutASharderHasNoShardSection(t *testing.T) {
	scene(t, "x", func(t *testing.T, w *world, h *debugpage.Handler) {
		assert.NotContains(t, get(t, h, "/").Body.String(), `class="shard"`)
		body := get(t, h, "/?format=json").Body.String()
		assert.NotContains(t, body, `"shard"`)
		assert.NotContains(t, body, `"ownerless"`)
	})
}

// TestThePageNamesACrashedReplicasBucketsOwnerlessUntilTheirTakeover: over
// real replicas sharing a memory store, the surviving replica's page shows
// the other's buckets with it as owner, then as ownerless once it has
// crashed (store unreachable, nothing released), then owned by the
// survivor at a newer epoch with one more move.
func TestThePageNamesACrashedReplicasBucketsOwnerlessUntilTheirTakeover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		raw := store.NewMemory[[]byte]()
		opts := shard.Options{Buckets: 8, TTL: 2 * time.Second}
		rs := shardtest.StartEach(t, raw, opts, "a", "b") // a is the assigner
		a, b := rs[0], rs[1]
		c, err := reconcile.New(store.NewView[string](raw, nil), reconcile.ReconcilerFunc[string](
			func(context.Context, reconcile.Request[string]) (reconcile.Result, error) {
				return reconcile.Result{}, nil
			}),
			reconcile.Options[string]{Name: "items", Prefix: "items/", Shard: a.Replica})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		time.Sleep(5 * time.Second)
		h := debugpage.New(debugpage.Options{}, c)

		page := getShard(t, h)
		require.True(t, page.Synced)
		require.Empty(t, page.Degraded)
		before := page.Shard
		require.NotNil(t, before)
		require.True(t, before.Assigner)
		require.Empty(t, before.Ownerless)
		var victims []int
		for _, b := range before.Buckets {
			if b["owner"] == "b" {
				victims = append(victims, int(b["bucket"].(float64)))
				require.Equal(t, "owned", b["state"])
			}
		}
		require.Len(t, victims, 4)

		b.Crash()
		var shown []int
		for range 2 * opts.TTL / (50 * time.Millisecond) {
			time.Sleep(50 * time.Millisecond)
			if s := getShard(t, h).Shard; len(s.Ownerless) > len(shown) {
				shown = s.Ownerless
				for _, b := range shown {
					assert.Equal(t, "ownerless", s.Buckets[b]["state"], "bucket %d", b)
					assert.Equal(t, "b", s.Buckets[b]["owner"], "bucket %d names its crashed owner", b)
				}
				assert.Contains(t, get(t, h, "/").Body.String(), fmt.Sprintf(`<tr class="bucket ownerless" data-bucket="%d">`, shown[0]))
			}
		}
		require.Equal(t, victims, shown, "the crashed replica's buckets were never all shown ownerless")
		after := getShard(t, h).Shard
		require.Empty(t, after.Ownerless)
		for _, b := range victims {
			assert.Equal(t, "a", after.Buckets[b]["owner"])
			assert.Equal(t, "mine", after.Buckets[b]["state"])
			assert.Greater(t, after.Buckets[b]["epoch"], before.Buckets[b]["epoch"])
			assert.Equal(t, before.Buckets[b]["moves"].(float64)+1, after.Buckets[b]["moves"])
		}
		cancel()
		require.NoError(t, <-done)
		a.Stop()
	})
}
