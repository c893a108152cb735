package main

import (
	"errors"
	"regexp"
	"testing"

	"github.com/converge-go/converge/examples/postgres/internal/cluster"
	"github.com/converge-go/converge/internal/syncbuf"
)

// The narrated demo runs its whole story on a private PostgreSQL (its
// operator a copy of the test binary) and checks every step itself: the
// objects made and altered, drift healed, backups verified, PostgreSQL
// named as down on /readyz and the debug page and the operator ready again
// once it is back, a fresh store that drops nothing, and deletions made
// while the operator was down carried out by the next one.
func TestTheDemoTellsItsWholeStoryAndStopsEverythingItStarted(t *testing.T) {
	if _, err := cluster.BinDir(cluster.Options{}); errors.Is(err, cluster.ErrNotInstalled) {
		t.Skipf("skipping: no PostgreSQL to run the demo on: %v", err)
	}
	var out syncbuf.Buffer
	err := runDemo(t.Context(), DemoConfig{Out: &out, Executable: mustExecutable(t), Env: []string{testMainEnv + "=1"}, Dir: t.TempDir()})
	story := out.String()
	if errors.Is(err, cluster.ErrNoUser) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, story)
	}
	for _, want := range []string{
		`psql: roles app\(login=true limit=10\)`,
		`put back by the drift source's next poll`,
		`backups/before-upgrade: Succeeded, .*\.dump, \d+ bytes, [1-9]\d* entries`,
		`backups/verified: Succeeded after its restore drill: .* held appdb's 20000 rows and checksum as recorded`,
		`restores/before_second: a new cluster in .* holds order 20001, not 20002`,
		`delete restores/before_second: its cluster stopped and removed`,
		`/readyz: 503 .*dependency: down: postgres`,
		`debug page: postgres down`,
		`/readyz: 200 ok`,
		`appdb and archive are still there`,
		`archive \(reclaim retain\) kept and released`,
		`result:\s+ok`,
	} {
		if !regexp.MustCompile(want).MatchString(story) {
			t.Errorf("the story lacks %q\n%s", want, story)
		}
	}
}
