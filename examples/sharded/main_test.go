package main

import (
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs this test binary as a replica process when a test's fleet
// starts it (replicaEnv), and otherwise runs the tests and fails if one
// left a goroutine behind.
func TestMain(m *testing.M) {
	if os.Getenv(replicaEnv) == "1" {
		os.Exit(runReplica(os.Args[1:], os.Stderr))
	}
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	goleak.VerifyTestMain(m)
}
