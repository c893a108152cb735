//go:build unix

package cputime_test

import (
	"testing"

	"github.com/converge-go/converge/internal/cputime"
)

// TestProcessGrowsWithWorkDone: CPU time spent between two calls shows in
// their difference.
func TestProcessGrowsWithWorkDone(t *testing.T) {
	before := cputime.Process()
	x := 0
	for i := range 50_000_000 {
		x += i % 7
	}
	if x == 0 {
		t.Fatal("unreachable")
	}
	if after := cputime.Process(); after <= before {
		t.Fatalf("CPU time did not grow: %v then %v", before, after)
	}
}
