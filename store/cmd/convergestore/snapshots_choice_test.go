package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/store/snapshot"
	"github.com/converge-go/converge/store/snapshot/snapshottest"
	bolt "go.etcd.io/bbolt"
)

// damageRecord makes the store file at path one Open refuses while its
// identity can still be read: a record of key too short to decode.
func damageRecord(t *testing.T, path, key string) []byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("converge.objects")).Put([]byte(key), []byte{1, 2, 3})
	})
	if err = errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// snapshotsOf returns the revisions of the good snapshots of identity in
// dir, the highest first.
func snapshotsOf(t *testing.T, dir, identity string) []int64 {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*"+snapshot.Ext))
	if err != nil {
		t.Fatal(err)
	}
	var revs []int64
	for _, p := range paths {
		if info, err := snapshot.CheckFile(p); err == nil && info.Identity == identity {
			revs = append(revs, info.Revision)
		}
	}
	slices.Sort(revs)
	slices.Reverse(revs)
	return revs
}

// Two servers sharing one -snapshot-dir with -snapshot-keep 1 each keep
// their own newest snapshot, and a stale snapshot of one stamped years
// ahead neither survives its next save nor makes it delete what it saved.
// -recover-from that directory restores the damaged store's own snapshot,
// never the other's; a directory holding only another store's snapshots
// is refused (exit 3), saying to name a snapshot file, and -recover-from
// FILE then restores it, without claiming that no revision is lost.
func TestRecoveryFromASharedDirectoryRestoresTheDamagedStoresOwnSnapshot(t *testing.T) {
	snaps := t.TempDir()
	dirA, dirB := t.TempDir(), t.TempDir()
	flags := []string{"-snapshot-dir", snaps, "-snapshot-every", "20ms", "-snapshot-keep", "1"}
	a, b := start(t, dirA, flags...), start(t, dirB, flags...)
	_, _, idA := fillServer(t, a)
	ca := client[raw](t, a.url, a.token(t))
	stale := filepath.Join(snaps, "stale.snap")
	snapshottest.WriteFile(t, stale, snapshottest.Header{Identity: idA, Revision: 1, Time: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)},
		snapshottest.Object("app/stale", `{"spec":{}}`, 1))
	if _, err := ca.Create(t.Context(), "app/later", raw(`{"spec":{"name":"later"}}`)); err != nil {
		t.Fatal(err)
	}
	wantA, revA, err := ca.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	c := client[raw](t, b.url, b.token(t))
	if _, err := c.Create(t.Context(), "b/only", raw(`{"spec":{"name":"b"}}`)); err != nil {
		t.Fatal(err)
	}
	_, revB, idB := fillServer(t, b)
	waitFor(t, "a snapshot of each store at its revision", func() bool {
		return slices.Equal(snapshotsOf(t, snaps, idA), []int64{revA}) && slices.Equal(snapshotsOf(t, snaps, idB), []int64{revB})
	})
	a.stop(t)
	b.stop(t)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale snapshot stamped 2030 is still there (%v)", err)
	}

	pathA := filepath.Join(dirA, StoreFile)
	damageRecord(t, pathA, "app/web")
	r := start(t, dirA, "-recover-from", snaps)
	if out := r.stdout.String(); !strings.Contains(out, "recovered the damaged "+pathA) || !strings.Contains(out, "no revision is lost") {
		t.Errorf("no word of the recovery:\n%s", out)
	}
	got, _, err := client[raw](t, r.url, r.token(t)).List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	sameObjects(t, got, wantA)
	r.stop(t)

	// B's file damaged, with only A's snapshots beside: refused, unless named.
	onlyA := t.TempDir()
	var fileA string
	paths, err := filepath.Glob(filepath.Join(snaps, "*"+snapshot.Ext))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if info, err := snapshot.CheckFile(p); err == nil && info.Identity == idA {
			fileA = filepath.Join(onlyA, filepath.Base(p))
			if err := os.Rename(p, fileA); err != nil {
				t.Fatal(err)
			}
		}
	}
	pathB := filepath.Join(dirB, StoreFile)
	damaged := damageRecord(t, pathB, "app/web")
	refused := launch(t, dirB, "-recover-from", onlyA)
	if code := refused.refused(t); code != exitDamaged || !strings.Contains(refused.stderr.String(), "-recover-from FILE") {
		t.Errorf("recovery from another store's snapshots: exit %d\n%s", code, refused.stderr)
	}
	if after, err := os.ReadFile(pathB); err != nil || !bytes.Equal(after, damaged) {
		t.Errorf("the damaged file was changed (%v)", err)
	}
	named := start(t, dirB, "-recover-from", fileA)
	if out := named.stdout.String(); !strings.Contains(out, "recovered the damaged "+pathB+" from "+fileA) || strings.Contains(out, "no revision is lost") {
		t.Errorf("the recovery from a named snapshot of another store says:\n%s", out)
	}
	got, _, err = client[raw](t, named.url, named.token(t)).List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	sameObjects(t, got, wantA)
}
