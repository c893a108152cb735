package main

import (
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/converge-go/converge/examples/replicaset/replicaset"
)

// TestMain runs the test binary as a pod when the supervisor starts it in
// pod mode, and otherwise runs the tests and checks that none of them left
// a goroutine behind.
func TestMain(m *testing.M) {
	if os.Getenv(replicaset.PodEnv) == "1" {
		os.Exit(replicaset.RunPod(os.Args[1:]))
	}
	// A pod built with the race detector sleeps a second at exit (the
	// detector's atexit_sleep_ms) unless told not to.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	goleak.VerifyTestMain(m)
}
