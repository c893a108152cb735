package demo

import (
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/converge-go/converge/examples/internal/pods"
)

// TestMain is the TestMain of a package whose tests start pods running the
// test binary: in a pod, it runs the pod; otherwise it runs the tests and
// fails if one of them left a goroutine behind.
func TestMain(m *testing.M) {
	if pods.IsPod() {
		os.Exit(pods.RunPod(os.Args[1:]))
	}
	// A pod built with the race detector sleeps a second at exit (the
	// detector's atexit_sleep_ms) unless told not to.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	goleak.VerifyTestMain(m)
}

// AssertNoProcessLeft fails t if a process or process group of pids still
// exists: the demos' tests check it independently of the demos' own check.
func AssertNoProcessLeft(t testing.TB, pids []int) {
	t.Helper()
	if len(pids) == 0 {
		t.Fatal("no pod was started")
	}
	if alive := pods.Survivors(pids); len(alive) > 0 {
		t.Errorf("pods or their process groups still exist: %v", alive)
	}
}
