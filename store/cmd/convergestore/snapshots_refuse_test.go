package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/snapshot"
	"github.com/converge-go/converge/store/snapshot/snapshottest"
)

// -restore-from refuses (exit 1) a snapshot holding what the server could
// not serve, naming the key or the revision, and makes no store file: a
// value that is not JSON, or JSON but no object (which would break every
// list, snapshot and write of its key), or a revision whose bump would pass
// snapshot.MaxRevision (whose writes would soon overflow). A snapshot at
// the limit is served, and takes writes. -recover-from refuses such a
// snapshot too (exit 3) and leaves the damaged file as it was.
func TestRestoreFromRefusesWhatTheServerCouldNotServeNamingTheKeyOrRevision(t *testing.T) {
	limit := int64(snapshot.MaxRevision - boltstore.DefaultRevisionBump)
	for name, tc := range map[string]struct {
		rev   int64
		value string
		want  string
	}{
		"a value that is not JSON":           {5, `not json`, `"app/bad"`},
		"a value that is JSON but no object": {5, `[1,2]`, `"app/bad"`},
		"a revision that leaves no room":     {math.MaxInt64 - boltstore.DefaultRevisionBump - 2, `{"spec":{}}`, fmt.Sprint(math.MaxInt64 - boltstore.DefaultRevisionBump - 2)},
		"a revision past the limit by one":   {limit + 1, `{"spec":{}}`, fmt.Sprint(limit + 1)},
	} {
		file := filepath.Join(t.TempDir(), "s.snap")
		snapshottest.WriteFile(t, file, snapshottest.Header{Identity: "bolt:A", Revision: tc.rev},
			snapshottest.Object("app/a", `{"spec":{"n":1}}`, 1), snapshottest.Object("app/bad", tc.value, tc.rev))
		dir := t.TempDir()
		r := launch(t, dir, "-restore-from", file)
		if code := r.refused(t); code != exitError || !strings.Contains(r.stderr.String(), tc.want) || !strings.Contains(r.stderr.String(), "nothing was restored") {
			t.Errorf("%s: exit %d, want %d naming %s:\n%s", name, code, exitError, tc.want, r.stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, StoreFile)); !os.IsNotExist(err) {
			t.Errorf("%s: a store file was made (%v)", name, err)
		}
	}

	file := filepath.Join(t.TempDir(), "s.snap")
	snapshottest.WriteFile(t, file, snapshottest.Header{Identity: "bolt:A", Revision: limit}, snapshottest.Object("app/a", `{"spec":{"n":1}}`, limit))
	s := start(t, t.TempDir(), "-restore-from", file)
	c := client[raw](t, s.url, s.token(t))
	last := int64(snapshot.MaxRevision)
	for i := range 3 {
		o, err := c.Create(t.Context(), fmt.Sprint("app/new", i), raw(`{"spec":{}}`))
		if err != nil || o.Revision <= last {
			t.Fatalf("write %d at the limit: revision %d after %d: %v", i+1, o.Revision, last, err)
		}
		last = o.Revision
	}
	s.stop(t)

	// A recovery from such a snapshot of the damaged store.
	a := start(t, t.TempDir())
	_, _, id := fillServer(t, a)
	a.stop(t)
	path := filepath.Join(a.dir, StoreFile)
	damaged := damageRecord(t, path, "app/web")
	snaps := t.TempDir()
	snapshottest.WriteFile(t, filepath.Join(snaps, "s.snap"), snapshottest.Header{Identity: id, Revision: 3}, snapshottest.Object("app/bad", `not json`, 3))
	refused := launch(t, a.dir, "-recover-from", snaps)
	if code := refused.refused(t); code != exitDamaged || !strings.Contains(refused.stderr.String(), `"app/bad"`) {
		t.Errorf("recovery from an unservable snapshot: exit %d\n%s", code, refused.stderr)
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, damaged) {
		t.Errorf("the damaged file was changed (%v)", err)
	}
}
