package boltstore_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/snapshot"
	"github.com/converge-go/converge/store/snapshot/snapshottest"
)

// layerCheck is the check a store server serving JSON objects through
// apistore's JSONKind gives a restore: the value decodes with the JSON
// codec, and its metadata as the layer reads it.
var layerCheck = snapshot.Decodes[json.RawMessage](store.JSON[json.RawMessage]{}, func(v json.RawMessage) error {
	_, err := apistore.JSONKind{}.Meta(v)
	return err
})

// snapshotFile writes a snapshot of identity at rev holding objs into a
// new directory and returns its path.
func snapshotFile(t *testing.T, identity string, rev int64, objs ...store.Object[[]byte]) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s"+snapshot.Ext)
	snapshottest.WriteFile(t, path, snapshottest.Header{Identity: identity, Revision: rev}, objs...)
	return path
}

// requireNoStoreFile fails t if the directory of path holds anything.
func requireNoStoreFile(t *testing.T, path string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(path))
	mustNot(t, err)
	if len(entries) != 0 {
		t.Fatalf("a refused restore left %d files, %s first", len(entries), entries[0].Name())
	}
}

// A restore given the check of the layer that will serve the store
// refuses a snapshot holding a value that layer cannot read (not JSON,
// JSON but no object, metadata that does not decode): the error matches
// snapshot.ErrUnservable and store.ErrInvalid and names the key, and no
// file is left; a recovery refuses it too and leaves the damaged file as
// it was. Without the check the same snapshot restores (its bytes are
// bytes).
func TestARestoreRefusesAValueItsLayerCannotReadNamingTheKey(t *testing.T) {
	for name, bad := range map[string]string{
		"not JSON":                    `not json`,
		"JSON but no object":          `42`,
		"metadata that do not decode": `{"metadata":{"finalizers":"one"},"spec":{}}`,
	} {
		snap := snapshotFile(t, "bolt:A", 3,
			snapshottest.Object("app/a", `{"spec":{"n":1}}`, 1),
			snapshottest.Object("app/bad", bad, 2),
			snapshottest.Object("app/c", `{"spec":{}}`, 3))
		path, _, err := restoreFile(t, snap, boltstore.WithValueCheck(layerCheck))
		if !errors.Is(err, snapshot.ErrUnservable) || !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), `"app/bad"`) {
			t.Fatalf("%s: %v, want ErrUnservable naming app/bad", name, err)
		}
		requireNoStoreFile(t, path)
		if _, _, err := restoreFile(t, snap); err != nil {
			t.Fatalf("%s: without a check: %v", name, err)
		}
	}

	damagedPath, damaged, identity := damagedStore(t)
	dir := t.TempDir()
	snapshottest.WriteFile(t, filepath.Join(dir, "s.snap"), snapshottest.Header{Identity: identity, Revision: 3},
		snapshottest.Object("app/bad", `not json`, 3))
	_, rec, err := boltstore.OpenOrRecover[*item](damagedPath, dir, boltstore.WithValueCheck(layerCheck))
	if !errors.Is(err, boltstore.ErrCorrupt) || !errors.Is(err, snapshot.ErrUnservable) || !strings.Contains(err.Error(), `"app/bad"`) || rec.Recovered {
		t.Fatalf("a recovery from an unservable snapshot: %v", err)
	}
	assertUnchanged(t, damagedPath, damaged)
}

// A restore refuses a snapshot whose revision plus the bump passes
// snapshot.MaxRevision, naming the revision, with snapshot.ErrUnservable
// and store.ErrInvalid, and leaves no file; one at the limit restores, and
// the store then takes writes at growing positive revisions and reopens
// whole. Checked at and around the limit, for the default bump and a bump
// of 1, and at the largest revisions an int64 holds.
func TestARestoreRefusesARevisionThatLeavesNoRoomNamingIt(t *testing.T) {
	const limit = snapshot.MaxRevision
	for _, bump := range []int64{1, boltstore.DefaultRevisionBump} {
		for _, rev := range []int64{limit - bump - 1, limit - bump, limit - bump + 1, limit, math.MaxInt64 - bump - 2, math.MaxInt64 - 1, math.MaxInt64} {
			what := fmt.Sprintf("revision %d, bump %d", rev, bump)
			snap := snapshotFile(t, "bolt:A", rev, snapshottest.Object("app/a", `{"n":1}`, rev))
			path, restored, err := restoreFile(t, snap, boltstore.WithRevisionBump(bump))
			if rev > limit-bump {
				if !errors.Is(err, snapshot.ErrUnservable) || !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprint(rev)) {
					t.Fatalf("%s: %v, want ErrUnservable naming the revision", what, err)
				}
				requireNoStoreFile(t, path)
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			s := openAt(t, path)
			last := restored.Revision
			for i := range 5 {
				o, err := s.Create(t.Context(), fmt.Sprint("new/", i), &item{N: i})
				if err != nil || o.Revision <= last {
					t.Fatalf("%s: write %d at revision %d after %d: %v", what, i+1, o.Revision, last, err)
				}
				last = o.Revision
			}
			mustNot(t, s.Close())
			s = openAt(t, path)
			if got, err := s.Revision(t.Context()); err != nil || got != last {
				t.Fatalf("%s: reopened at %d (%v), want %d", what, got, err, last)
			}
			mustNot(t, s.Close())
		}
	}
	if _, _, err := restoreFile(t, snapshotFile(t, "", 1), boltstore.WithRevisionBump(limit+1)); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("a bump past MaxRevision: %v, want ErrInvalid", err)
	}
}
