package bench

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var statedbObjects = flag.Int("statedb.objects", 5000, "objects of TestStatedbWorkloadConvergesEveryObjectOnEveryImplementation (go run ./cmd/statedbside for the full comparison)")

// TestStatedbWorkloadConvergesEveryObjectOnEveryImplementation runs
// statedb's reconciler benchmark at a smoke-test size on statedb and on
// every converge variant, and checks that each converged every object
// with one mock operation (each run checks its own count and statuses).
func TestStatedbWorkloadConvergesEveryObjectOnEveryImplementation(t *testing.T) {
	o := SideOptions{Objects: *statedbObjects}
	for _, impl := range SideImpls() {
		t.Run(impl.Name, func(t *testing.T) {
			res, err := impl.Run(o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Objects != o.Objects || res.Converged <= 0 {
				t.Fatalf("result %+v", res)
			}
			t.Log(res)
		})
	}
}

// TestAStatedbRunWithHeapProfileWritesAProfileOfTheConvergedHeap: with
// SideOptions.HeapProfile a run writes a non-empty heap profile there.
func TestAStatedbRunWithHeapProfileWritesAProfileOfTheConvergedHeap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.pprof")
	if _, err := RunConvergeStatedb("converge", SideOptions{Objects: 100, HeapProfile: path}); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Size() == 0 {
		t.Fatalf("heap profile: %v, %v", info, err)
	}
}

// TestRoundTripCompletesEveryTrialOnEveryImplementation measures the round
// trip at a smoke-test size on every implementation and checks that every
// trial completed (each run checks its own count of operations and that
// every object ended done) and that the percentiles are positive and
// ordered. It asserts no time.
func TestRoundTripCompletesEveryTrialOnEveryImplementation(t *testing.T) {
	o := RoundTripOptions{Objects: 200, Trials: 300}
	for _, impl := range RoundTripImpls() {
		t.Run(impl.Name, func(t *testing.T) {
			res, err := impl.Run(o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Trials != o.Trials || res.Objects != o.Objects {
				t.Fatalf("result %+v, want %d trials over %d objects", res, o.Trials, o.Objects)
			}
			if res.P50 <= 0 || res.P50 > res.P99 || res.P99 > res.P999 || res.P999 > res.Max {
				t.Fatalf("percentiles not positive and ordered: %+v", res)
			}
			t.Log(res)
		})
	}
}
