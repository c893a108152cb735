package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/converge-go/converge/internal/syncbuf"
)

// TestDemoAdoptsTheAttemptRunningAtTheCrashAndLeavesNoProcess runs the
// narrated demo (its daemons, shims and the client are copies of the test
// binary) and checks its story: the backup job, running when the daemon
// is SIGKILLed, is adopted by the next daemon and runs once; every job
// ends as its spec says; no process is left (the demo checks and fails
// otherwise).
func TestDemoAdoptsTheAttemptRunningAtTheCrashAndLeavesNoProcess(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out syncbuf.Buffer
	err = runDemo(t.Context(), DemoConfig{Out: &out, Executable: exe, Env: []string{testMainEnv + "=1"}, Dir: t.TempDir()})
	story := out.String()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, story)
	}
	if n := strings.Count(story, "backup  Running"); n != 1 {
		t.Errorf("backup was recorded running %d times; want once (adopted after the crash)\n%s", n, story)
	}
	if !strings.Contains(story, "runs on: true") {
		t.Errorf("backup's attempt did not survive the daemon's SIGKILL\n%s", story)
	}
	for _, want := range []string{
		`backup\s+Succeeded\s+1/1\s+0\s`,
		`broken\s+Failed\s+2/2\s+3\s`,
		`flaky\s+Succeeded\s+3/4\s+0\s`,
		`hello\s+Succeeded\s+1/1\s+0\s`,
		`stuck\s+Failed\s+1/1\s+143\s.*timed out`,
		`no process is left`,
	} {
		if !regexp.MustCompile(want).MatchString(story) {
			t.Errorf("the story lacks %q\n%s", want, story)
		}
	}
}
