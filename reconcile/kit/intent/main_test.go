package intent_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestMain runs the tests, unless the binary was started as a crash
// test's child (one of the helper variables set): then it runs that
// helper instead of any test and exits with its status. The helpers are
// no Test functions, so they never show up as tests that pass doing
// nothing.
func TestMain(m *testing.M) {
	if v := os.Getenv(stepperEnv); v != "" {
		url, log, ok := strings.Cut(v, " ")
		if !ok {
			fmt.Fprintln(os.Stderr, "want", stepperEnv+"=URL LOGFILE")
			os.Exit(2)
		}
		os.Exit(stepper(url, log))
	}
	if path := os.Getenv(fileWriterEnv); path != "" {
		os.Exit(fileWriter(path))
	}
	if mode := os.Getenv(attemptEnv); mode != "" {
		os.Exit(attempt(mode))
	}
	os.Exit(m.Run())
}
