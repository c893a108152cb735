package etcdprocs

import (
	"os"
	"testing"
	"time"
)

// TestProcessCPUReadsTheProcessesCPUTime: processCPU reports the CPU time a
// process has used, growing as it works (here the test's own process).
func TestProcessCPUReadsTheProcessesCPUTime(t *testing.T) {
	before, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	x := 0
	for {
		for i := range 1_000_000 {
			x += i
		}
		after, err := processCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU time stayed at %v after 30 s of work (%d)", after, x)
		}
	}
	if _, err := processCPU(-1); err == nil {
		t.Error("processCPU of no process succeeded")
	}
}
