package browsertest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a goroutine outlives the tests: the manager,
// the controller and the browser's connection all stop.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
