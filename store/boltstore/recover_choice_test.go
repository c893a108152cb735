package boltstore_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/snapshot"
	"github.com/converge-go/converge/store/snapshot/snapshottest"
)

// damagedStore writes a store file at revision 5 whose identity can still
// be read but which Open refuses (a damaged record), and returns its path,
// bytes and identity.
func damagedStore(t *testing.T) (path string, data []byte, identity string) {
	t.Helper()
	s, path := openTemp(t)
	for i := range 5 {
		_, err := s.Create(t.Context(), fmt.Sprint("key/", i), &item{N: i})
		mustNot(t, err)
	}
	identity = identityOf(t, s)
	mustNot(t, boltstore.DamageRecord(s, "key/0"))
	mustNot(t, s.Close())
	data, err := os.ReadFile(path)
	mustNot(t, err)
	return path, data, identity
}

// snapAt writes into dir a snapshot named name of identity at rev,
// stamped at year, holding one object "key/s" whose S is name.
func snapAt(t *testing.T, dir, name, identity string, rev int64, year int) string {
	t.Helper()
	path := filepath.Join(dir, name+snapshot.Ext)
	snapshottest.WriteFile(t, path, snapshottest.Header{Identity: identity, Revision: rev, Time: time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC)},
		snapshottest.Object("key/s", `{"n":1,"s":"`+name+`"}`, rev))
	return path
}

// restoredFrom returns the S of the object the recovered store s holds,
// which names the snapshot it came from.
func restoredFrom(t *testing.T, s *boltstore.Store[*item]) string {
	t.Helper()
	o, err := s.Get(t.Context(), "key/s")
	mustNot(t, err)
	return o.Value.S
}

// A damaged file is recovered from the snapshot of its own identity with
// the highest revision (the last name among equal revisions) not above
// its own revision, whatever the times in the headers: a stale one stamped
// years ahead, another store's of a higher revision sharing the directory,
// and one of its identity above its revision (another history of it: its
// file put back from a copy) are passed over.
// With only other stores' snapshots, or its own identity unreadable, it is
// refused with ErrCorrupt and snapshot.ErrIdentity and left as it was,
// unless a snapshot is named by its file; a named snapshot of another
// store restores, and the recovery says that what was lost is unknown.
func TestARecoveryChoosesTheDamagedStoresSnapshotByIdentityThenRevision(t *testing.T) {
	path, data, identity := damagedStore(t)
	dir := t.TempDir()
	snapAt(t, dir, "own-r3-stamped-2030", identity, 3, 2030)
	snapAt(t, dir, "own-r4-a", identity, 4, 2029)
	snapAt(t, dir, "own-r4-b", identity, 4, 1999)
	damaged := snapAt(t, dir, "own-r5-damaged", identity, 5, 2000)
	mustNot(t, os.Truncate(damaged, 40))
	other := snapAt(t, dir, "other-r900", "bolt:OTHERSTOREAAAAAAAAAAAAAAA", 900, 2031)
	elsewhen := snapAt(t, dir, "own-r9-another-history", identity, 9, 1998)

	s, rec, err := boltstore.OpenOrRecover[*item](path, dir)
	mustNot(t, err)
	if got := restoredFrom(t, s); got != "own-r4-b" || rec.Snapshot != filepath.Join(dir, "own-r4-b.snap") {
		t.Fatalf("recovered from %s (%s), want own-r4-b", rec.Snapshot, got)
	}
	if rec.Identity != identity || !rec.SameStore() || len(rec.Skipped) != 1 || rec.Skipped[0].Path != damaged || len(rec.Foreign) != 1 || rec.Foreign[0].Path != other {
		t.Fatalf("identity %q, skipped %+v, foreign %+v", rec.Identity, rec.Skipped, rec.Foreign)
	}
	if len(rec.Above) != 1 || rec.Above[0].Path != elsewhen {
		t.Fatalf("above the damaged file's revision: %+v, want the snapshot at 9", rec.Above)
	}
	if from, through, ok := rec.Lost(); !ok || from != 5 || through != 5 {
		t.Fatalf("lost %d to %d (%v), want revision 5", from, through, ok)
	}
	mustNot(t, s.Close())

	// Only another store's snapshots: refused, unless named.
	shared := t.TempDir()
	snapAt(t, shared, "other-r900", "bolt:OTHERSTOREAAAAAAAAAAAAAAA", 900, 2031)
	mustNot(t, os.WriteFile(path, data, 0o600))
	mustNot(t, os.Remove(rec.DamagedFile))
	_, rec, err = boltstore.OpenOrRecover[*item](path, shared)
	if !errors.Is(err, boltstore.ErrCorrupt) || !errors.Is(err, snapshot.ErrIdentity) || !strings.Contains(err.Error(), "named") || rec.Recovered {
		t.Fatalf("only another store's snapshots: %v, %+v", err, rec)
	}
	assertUnchanged(t, path, data)
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Fatalf("%d files beside the damaged one", len(entries)-1)
	}
	s, rec, err = boltstore.OpenOrRecover[*item](path, other)
	mustNot(t, err)
	if restoredFrom(t, s) != "other-r900" || rec.SameStore() || rec.Identity != identity {
		t.Fatalf("the named snapshot: %+v", rec)
	}
	if _, _, ok := rec.Lost(); ok {
		t.Fatal("the revisions of another store's snapshot compared with the damaged file's")
	}
	mustNot(t, s.Close())

	// An identity that cannot be read: refused, unless named.
	truncated := data[:len(data)/2]
	mustNot(t, os.WriteFile(path, truncated, 0o600))
	_, rec, err = boltstore.OpenOrRecover[*item](path, dir)
	if !errors.Is(err, boltstore.ErrCorrupt) || !errors.Is(err, snapshot.ErrIdentity) || rec.Identity != "" {
		t.Skipf("the half file still tells its identity (%v); the case is covered by TestADamagedFileIsRecoveredFromTheNewestGoodSnapshot", err)
	}
	assertUnchanged(t, path, truncated)
	s, rec, err = boltstore.OpenOrRecover[*item](path, filepath.Join(dir, "own-r4-a.snap"))
	mustNot(t, err)
	if restoredFrom(t, s) != "own-r4-a" || rec.SameStore() {
		t.Fatalf("the named snapshot: %+v", rec)
	}
	mustNot(t, s.Close())
}
