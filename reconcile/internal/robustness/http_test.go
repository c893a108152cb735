package robustness_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/converge-go/converge/reconcile/internal/robustness"
	"github.com/converge-go/converge/store"
)

// dropping is how often the dropped-connection runs cut a connection: one
// request in 33 before it is handled, one in 33 after (a write's answer
// lost), and a watch stream at one frame in 50, at counts drawn from the
// seed. 50 is the watcher's DisconnectEvery: the first stream cut comes
// while the watch still wants events, so it reconnects by itself.
var dropping = drops{before: 0.03, after: 0.03, watchFrame: 0.02}

// TestRobustnessOverHTTPWithDroppedConnections runs the linearizability,
// watch and compaction checks through the HTTP store: the recorded
// clients and the watcher are httpstore clients of a handler serving the
// backend's store (behind the fault store, whose silent outage the handler
// serves too). Halfway through, every connection is cut at once; bolt is
// also restarted under the handler. In the dropped-connection runs the
// server also cuts connections at random before a request is handled,
// after it was handled (the answer is lost) and in the middle of watch
// streams, halfway through a frame now and then. A write whose connection
// was cut must be recorded as ambiguous (the client cannot know); the
// server's record of what it did with it resolves it before the check
// (robustness.Resolve), and only writes nobody knew stay ambiguous. The
// history must be linearizable within httpCheckTimeout, and the watch must
// deliver every change exactly once in order across the client's
// transparent reconnects and the watcher's own resumes.
func TestRobustnessOverHTTPWithDroppedConnections(t *testing.T) {
	cases := []struct {
		name             string
		backend          func() robustness.Backend
		p                drops
		seeds, longSeeds int
		long             bool // skipped with -short
	}{
		{name: "memory", backend: memoryBackend, seeds: 1, longSeeds: 5},
		{name: "memory/dropping", backend: memoryBackend, p: dropping, seeds: 2, longSeeds: 10},
		{name: "bolt/dropping", backend: boltBackend, p: dropping, seeds: 1, longSeeds: 5, long: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.long && testing.Short() {
				t.Skip("-short runs memory only")
			}
			for _, cfg := range httpRuns(c.seeds, c.longSeeds) {
				b, run := overHTTP(c.backend(), c.p, cfg.Seed)
				t.Run("seed="+strconv.FormatUint(cfg.Seed, 10), func(t *testing.T) {
					r := robustness.Verify(t.Context(), t, b, cfg)
					checkExercised(t, b, r)
					checkHTTPRun(t, run, r, c.p)
				})
			}
		})
	}
	t.Run("etcd/dropping", func(t *testing.T) {
		if os.Getenv(longEnv) == "" {
			// 1 of 3 long histories failed on etcd's own race (see the
			// README): too often for the default run.
			t.Skip("long runs only (" + longEnv + "): a watch over etcdstore can end with a false store.ErrCompacted")
		}
		for _, cfg := range httpRuns(1, 3) {
			eb, cluster := etcdBackend(1)
			b, run := overHTTP(eb, dropping, cfg.Seed)
			t.Run("seed="+strconv.FormatUint(cfg.Seed, 10), func(t *testing.T) {
				r := robustness.Verify(t.Context(), t, b, cfg)
				checkExercised(t, b, r)
				checkHTTPRun(t, run, r, dropping)
				ctx, cancel := context.WithTimeout(t.Context(), etcdPatience)
				defer cancel()
				if err := robustness.CheckCompaction(ctx, compactBehind{r.Store, cluster.store}, r.Watch.Events, r.Revision); err != nil {
					t.Errorf("compaction over HTTP: %v", err)
				}
			})
		}
	})
}

// httpCheckTimeout bounds each linearizability check of a run over HTTP
// (the checks take well under a second by default); long runs, 5 times the
// operations, get 5 times as long.
const httpCheckTimeout = time.Minute

// httpRuns is runs with the check bounded by httpCheckTimeout.
func httpRuns(seeds, longSeeds int) []robustness.Config {
	cfgs := runs(seeds, longSeeds)
	for i := range cfgs {
		cfgs[i].CheckTimeout = httpCheckTimeout
		if os.Getenv(longEnv) != "" {
			cfgs[i].CheckTimeout = 5 * httpCheckTimeout
		}
	}
	return cfgs
}

// compactBehind is the HTTP client of a run whose Compact compacts the
// store behind the server.
type compactBehind struct {
	store.Store[robustness.Value]
	c robustness.Compactor
}

func (s compactBehind) Compact(ctx context.Context, rev int64) error { return s.c.Compact(ctx, rev) }

// checkHTTPRun checks that the transport did what the run claims and that
// the recorder classified its cuts: a write cut before it was handled is
// ambiguous and known not to have happened; one cut after it was handled
// is ambiguous with the store's real answer known. It logs the figures.
func checkHTTPRun(t *testing.T, run *httpRun, r *robustness.Report, p drops) {
	t.Helper()
	d, tr := run.served.d, run.served.tr
	cutWrites, committed := checkCutWrites(t, d, r)
	streams := tr.streams.Load()
	reconnects := streams - run.watches.Load()
	t.Logf("%s seed %d over HTTP: %d requests cut before handling and %d after (%d recorded writes, all ambiguous; %d of them had committed), %d watch streams cut (%d halfway through a frame) over %d frames; %d watch streams opened, %d of them transparent reconnects",
		r.Backend, r.Config.Seed, d.before.Load(), d.after.Load(), cutWrites, committed, d.cuts.Load(), d.halves.Load(), d.frames.Load(), streams, reconnects)
	if p == (drops{}) {
		return
	}
	checkCutEverywhere(t, d, r, committed)
	if reconnects <= 0 {
		t.Errorf("the watch never reconnected by itself (%d streams opened for %d watches)", streams, run.watches.Load())
	}
}

// checkCutWrites checks how the recorder classified the writes the
// dropper cut, and returns how many it cut and how many of those had
// committed.
func checkCutWrites(t *testing.T, d *dropper, r *robustness.Report) (cutWrites, committed int) {
	t.Helper()
	byID := make(map[uint64]robustness.Op, len(r.Ops))
	for _, op := range r.Ops {
		byID[op.ID] = op
	}
	before, after := d.cutCalls()
	for _, id := range before {
		op := byID[id]
		if !op.Input.Op.IsWrite() {
			continue
		}
		cutWrites++
		if op.Output.Result != robustness.ResultUnknown || op.Actual == nil || op.Actual.Result != robustness.ResultFailed || !op.Known {
			t.Errorf("%v cut before the server handled it recorded as %v (actual %v, known %v), want unknown (actual failed, known to the server)", op.Input.Op, op.Output.Result, op.Actual, op.Known)
		}
	}
	for _, id := range after {
		op := byID[id]
		if !op.Input.Op.IsWrite() {
			continue
		}
		cutWrites++
		if op.Output.Result != robustness.ResultUnknown || op.Actual == nil {
			t.Errorf("%v whose answer the server dropped recorded as %v (actual %v), want unknown with the real answer known", op.Input.Op, op.Output.Result, op.Actual)
			continue
		}
		if op.Actual.Result == robustness.ResultOK {
			committed++
		}
	}
	return cutWrites, committed
}

// checkCutEverywhere checks that the dropper cut at every point: its
// schedules guarantee each kind of cut once the run has made as many
// requests, applied writes and watch frames as the mean gap of the
// schedule, which the messages give beside what the run made.
func checkCutEverywhere(t *testing.T, d *dropper, r *robustness.Report, committed int) {
	t.Helper()
	if every := d.cutFrame.Every(); every > r.Config.DisconnectEvery {
		t.Errorf("the first stream cut may come after the watcher has disconnected: frames cut one in %d, the watcher disconnects every %d events", every, r.Config.DisconnectEvery)
	}
	ops, applied := len(r.Ops), r.Revision-r.Start
	if d.before.Load() == 0 || d.after.Load() == 0 {
		t.Errorf("requests not cut before and after handling (%d, %d), though the plan cuts one of the first %d requests and one of the first %d handled; the run made %d operations",
			d.before.Load(), d.after.Load(), d.cutBefore.Every(), d.cutAfter.Every(), ops)
	}
	if committed == 0 {
		t.Errorf("no cut write had committed, though the plan cuts the answer of one of the first %d writes the store applied; it applied %d", d.cutApplied.Every(), applied)
	}
	if d.cuts.Load() == 0 || d.halves.Load() == 0 {
		t.Errorf("%d watch streams cut (%d halfway through a frame), though the plan cuts one, halfway through a frame, within the first %d frames; the streams carried %d frames and the run %d changes",
			d.cuts.Load(), d.halves.Load(), d.cutFrame.Every(), d.frames.Load(), applied)
	}
}
