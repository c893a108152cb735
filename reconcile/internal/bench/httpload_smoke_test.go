package bench

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestEveryLoadTargetCompletesCASUpdatesAndNoWatcherLosesAnEvent runs a
// tiny load (4 clients, 2 watchers, 50 keys, 300 ms) against every target
// and checks behaviour only, never timings: each target completed
// successful CAS updates, one latency was recorded per Update call, and
// every watcher delivered the revision of every successful write exactly
// once and in order (RunLoad's verification).
func TestEveryLoadTargetCompletesCASUpdatesAndNoWatcherLosesAnEvent(t *testing.T) {
	cfg := LoadConfig{Clients: 4, Watchers: 2, Keys: 50, Duration: 300 * time.Millisecond, Settle: 30 * time.Second, Seed: 1}
	for _, target := range LoadTargets() {
		t.Run(target.Name, func(t *testing.T) {
			if _, err := os.Stat("/dev/shm"); err != nil && target.Name == "http-bolt-tmpfs" {
				t.Skipf("no tmpfs at /dev/shm: %v", err)
			}
			s, stop, err := target.Open(t.TempDir())
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			res, err := RunLoad(context.Background(), s, cfg)
			if serr := stop(); serr != nil {
				t.Errorf("stop: %v", serr)
			}
			if err != nil {
				t.Fatalf("RunLoad: %v", err)
			}
			if res.Writes == 0 {
				t.Fatalf("no successful CAS update in %v", res.Elapsed)
			}
			if got := int64(len(res.CAS)); got != res.Writes+res.Conflicts {
				t.Errorf("%d CAS latencies recorded, want one per update call (%d writes + %d conflicts)", got, res.Writes, res.Conflicts)
			}
			for i, n := range res.Events {
				if int64(n) != res.Writes {
					t.Errorf("watcher %d delivered %d events for %d writes", i, n, res.Writes)
				}
			}
			if len(res.Events) != cfg.Watchers {
				t.Errorf("%d watchers reported, want %d", len(res.Events), cfg.Watchers)
			}
			t.Logf("%s: %d writes, %d conflicts, %d resumes in %v", target.Name, res.Writes, res.Conflicts, res.Resumes, res.Elapsed)
		})
	}
}

// TestLoadWatchVerificationReportsALostEvent checks that the verification
// RunLoad relies on fails when a watcher missed a write, repeated one or
// saw one out of order.
func TestLoadWatchVerificationReportsALostEvent(t *testing.T) {
	revs := []int64{3, 4, 5}
	for name, seen := range map[string][]int64{
		"lost":        {3, 5},
		"repeated":    {3, 4, 4, 5},
		"reordered":   {3, 5, 4},
		"extra":       {3, 4, 5, 6},
		"none at all": nil,
	} {
		w := &loadWatcher{seen: seen}
		if err := w.verify(revs); err == nil {
			t.Errorf("%s: verify(%v) of %v passed", name, revs, seen)
		}
	}
	if err := (&loadWatcher{seen: []int64{3, 4, 5}}).verify(revs); err != nil {
		t.Errorf("exact delivery refused: %v", err)
	}
}
