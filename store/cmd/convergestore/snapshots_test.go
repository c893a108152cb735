package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/snapshot"
)

// fillServer creates a few resources through the server at s and returns
// its listing and identity.
func fillServer(t *testing.T, s *server) ([]store.Object[raw], int64, string) {
	t.Helper()
	ctx := t.Context()
	c := client[raw](t, s.url, s.token(t))
	for _, k := range []string{"app/web", "app/db", "jobs/nightly"} {
		if _, err := c.Create(ctx, k, raw(`{"spec":{"name":"`+k+`"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	objs, rev, err := c.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.Identity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return objs, rev, id
}

// sameObjects fails t unless got has want's keys and values.
func sameObjects(t *testing.T, got, want []store.Object[raw]) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d objects, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Key != want[i].Key || !bytes.Equal(got[i].Value, want[i].Value) {
			t.Fatalf("object %q %s, want %q %s", got[i].Key, got[i].Value, want[i].Key, want[i].Value)
		}
	}
}

// A snapshot saved with convergectl restores, with -restore-from, into a
// new -dir: the server serves its objects under a new identity, at
// revisions above the snapshot's plus the bump, and a watch from a revision
// of the old store fails with ErrCompacted; -restore-from over a store
// file is refused (exit 1) and leaves it; without the flag the restored
// store is served as it is.
func TestRestoreFromASnapshotServesItUnderANewIdentityAboveTheBump(t *testing.T) {
	a := start(t, t.TempDir())
	want, rev, id := fillServer(t, a)
	file := filepath.Join(t.TempDir(), "store.snap")
	if r := runBinary(t, ctlBinary, "", "-server", a.url, "-token", a.token(t), "snapshot", "save", file); r.code != exitOK {
		t.Fatalf("convergectl snapshot save: exit %d: %s", r.code, r.stderr)
	}
	a.stop(t)

	dir := t.TempDir()
	b := start(t, dir, "-restore-from", file)
	if !strings.Contains(b.stdout.String(), "convergestore: restored "+filepath.Join(dir, StoreFile)+" from "+file) {
		t.Errorf("no word of the restore:\n%s", b.stdout)
	}
	c := client[raw](t, b.url, b.token(t))
	got, now, err := c.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	sameObjects(t, got, want)
	if now < rev+boltstore.DefaultRevisionBump {
		t.Errorf("revision %d after the restore of revision %d", now, rev)
	}
	restored, err := c.Identity(t.Context())
	if err != nil || restored == id {
		t.Errorf("identity %q after the restore, the old store's %q (%v)", restored, id, err)
	}
	if _, err := c.Watch(t.Context(), "", rev); !errors.Is(err, store.ErrCompacted) {
		t.Errorf("a watch from the old store's revision %d: %v, want ErrCompacted", rev, err)
	}
	b.stop(t)

	before, err := os.ReadFile(filepath.Join(dir, StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	again := launch(t, dir, "-restore-from", file)
	if code := again.refused(t); code != exitError || !strings.Contains(again.stderr.String(), "holds one already") {
		t.Errorf("-restore-from over a store: exit %d\n%s", code, again.stderr)
	}
	if after, err := os.ReadFile(filepath.Join(dir, StoreFile)); err != nil || !bytes.Equal(before, after) {
		t.Errorf("the store file was changed (%v)", err)
	}
	served := start(t, dir)
	if got, err := client[raw](t, served.url, served.token(t)).Identity(t.Context()); err != nil || got != restored {
		t.Errorf("identity %q served again, %q restored (%v)", got, restored, err)
	}
}

// With -snapshot-dir the server saves snapshots as the store changes and
// keeps -snapshot-keep of them; after its store file is damaged,
// -recover-from that directory serves the newest snapshot's objects, says
// what it did, and keeps the damaged file aside. Without a good snapshot
// the damaged file is refused (exit 3) and left as it is.
func TestRecoverFromSnapshotsServesTheNewestAfterTheStoreFileIsDamaged(t *testing.T) {
	dir, snaps := t.TempDir(), t.TempDir()
	a := start(t, dir, "-snapshot-dir", snaps, "-snapshot-every", "20ms", "-snapshot-keep", "2")
	want, rev, id := fillServer(t, a)
	waitFor(t, fmt.Sprint("a snapshot of revision ", rev), func() bool {
		found, err := snapshot.Latest(snaps, id)
		return err == nil && found.Info.Revision == rev
	})
	a.stop(t)
	if files, _ := filepath.Glob(filepath.Join(snaps, "*"+snapshot.Ext)); len(files) > 2 {
		t.Errorf("%d snapshots kept, want at most 2", len(files))
	}
	path := filepath.Join(dir, StoreFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	damaged, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	refused := launch(t, dir, "-recover-from", t.TempDir())
	if code := refused.refused(t); code != exitDamaged || !strings.Contains(refused.stderr.String(), "was not recovered") {
		t.Errorf("recovery without a snapshot: exit %d\n%s", code, refused.stderr)
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, damaged) {
		t.Errorf("the damaged file was changed (%v)", err)
	}

	b := start(t, dir, "-recover-from", snaps)
	if !strings.Contains(b.stdout.String(), "convergestore: recovered the damaged "+path) {
		t.Errorf("no word of the recovery:\n%s", b.stdout)
	}
	got, _, err := client[raw](t, b.url, b.token(t)).List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	sameObjects(t, got, want)
	aside, err := filepath.Glob(path + ".damaged-*")
	if err != nil || len(aside) != 1 {
		t.Fatalf("the damaged file aside: %v %v", aside, err)
	}
	if kept, err := os.ReadFile(aside[0]); err != nil || !bytes.Equal(kept, damaged) {
		t.Errorf("the damaged file was not kept as it was (%v)", err)
	}
}

// Snapshot flags that contradict each other or are out of range exit 2.
func TestSnapshotFlagsThatContradictExitTwo(t *testing.T) {
	dir := t.TempDir()
	for args, want := range map[string]string{
		"-restore-from f -recover-from d":         "-restore-from and -recover-from together",
		"-snapshot-every 1s":                      "-snapshot-every and -snapshot-keep go with -snapshot-dir",
		"-snapshot-dir d -snapshot-every -1s":     "-snapshot-every -1s: want more than 0",
		"-snapshot-dir d -snapshot-keep -1":       "-snapshot-keep -1: want 1 or more",
		"-restore-to-revision 5":                  "go with -restore-from a log directory",
		"-restore-from d -restore-to-revision -1": "-restore-to-revision -1: want more than 0",
		"-restore-from d -restore-to-revision 5 -restore-to-time 2026-12-07T15:00:00Z": "restore to a revision or to a time",
		"-restore-from d -restore-to-time yesterday":                                   "want RFC 3339",
	} {
		r := runIn(t.Context(), append([]string{"-dir", dir}, strings.Fields(args)...)...)
		if first, _, _ := strings.Cut(r.stderr, "\n"); r.code != exitUsage || !strings.Contains(first, want) {
			t.Errorf("%s: exit %d, %q; want exit %d and %q", args, r.code, first, exitUsage, want)
		}
	}
}
