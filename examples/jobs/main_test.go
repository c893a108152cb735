package main

import (
	"os"
	"testing"
)

// testMainEnv makes the test binary run this program's main instead of the
// tests: the daemons, the shims and the client commands the tests start
// are copies of the test binary.
const testMainEnv = "JOBS_TEST_MAIN"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == taskArg {
		os.Exit(runTask(os.Args[2:]))
	}
	if os.Getenv(testMainEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
