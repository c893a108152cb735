package main

import (
	"os"
	"testing"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/internal/pods"
)

// TestMain runs this test binary as a pod when the demo's supervisor
// starts it, as a controller process when the etcd-loss test starts one
// (lossControllerEnv), and otherwise fails if a test left a goroutine
// behind.
func TestMain(m *testing.M) {
	if env, ok := os.LookupEnv(lossControllerEnv); ok && !pods.IsPod() {
		os.Exit(runLossController(env))
	}
	demo.TestMain(m)
}
