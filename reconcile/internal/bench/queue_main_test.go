package bench

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine outlives the tests or benchmarks:
// every queue must stop its goroutines on ShutDown.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
