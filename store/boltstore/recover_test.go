package boltstore_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/snapshot"
	bolt "go.etcd.io/bbolt"
)

// recoveryFixture writes a store file whose snapshot, saved into the
// returned directory, is older than the file: 20 revisions saved, 25
// written. It returns the file's bytes, the snapshot's path, its objects
// and the identity of the store.
func recoveryFixture(t *testing.T) (data []byte, snapDir, snapPath string, want []store.Object[*item], identity string) {
	t.Helper()
	s, path := openTemp(t)
	ctx := t.Context()
	for i := range 20 {
		_, err := s.Create(ctx, fmt.Sprintf("key/%02d", i), &item{N: i, S: strings.Repeat("x", 300)})
		mustNot(t, err)
	}
	want, _, err := s.List(ctx, "")
	mustNot(t, err)
	snapDir = t.TempDir()
	snapPath = filepath.Join(snapDir, "s.snap")
	_, err = snapshot.WriteFile(ctx, snapPath, snapshot.Typed[*item](s, nil))
	mustNot(t, err)
	for i := range 5 {
		_, err := s.Create(ctx, fmt.Sprintf("lost/%d", i), &item{N: i})
		mustNot(t, err)
	}
	identity = identityOf(t, s)
	mustNot(t, s.Close())
	data, err = os.ReadFile(path)
	mustNot(t, err)
	return data, snapDir, snapPath, want, identity
}

// recoverable returns the damages of data that Open refuses: every
// truncation it refuses and, for every page, the first damaged byte it
// refuses.
func recoverable(t *testing.T, data []byte) []damage {
	t.Helper()
	dir := t.TempDir()
	var ds []damage
	pages := map[string]bool{}
	for i, d := range damages(data) {
		page, flipped := "", strings.HasPrefix(d.name, "byte ")
		if flipped {
			page = d.name[strings.Index(d.name, " of page "):]
			if pages[page] {
				continue
			}
		}
		path := filepath.Join(dir, fmt.Sprintf("%d.db", i))
		mustNot(t, os.WriteFile(path, d.make(), 0o600))
		s, err := boltstore.Open[*item](path)
		if err == nil {
			mustNot(t, s.Close())
			continue
		}
		if flipped {
			pages[page] = true
		}
		ds = append(ds, d)
	}
	if len(pages) < 3 {
		t.Fatalf("damage refused in %d pages only", len(pages))
	}
	return ds
}

// A damaged file (truncated at each page boundary and within pages, a
// damaged byte in each page) is recovered from the good snapshot of its
// identity with the highest revision (or, when its identity cannot be
// read, only from the snapshot named):
// the store holds the snapshot's objects under a new identity above the
// bump, the damaged file is kept aside as it was, and Recovery says which
// snapshot, which revisions were lost (when the damaged file still tells
// its revision, which it must for some damages) and where the file went.
func TestADamagedFileIsRecoveredFromTheNewestGoodSnapshot(t *testing.T) {
	data, snapDir, snapPath, want, identity := recoveryFixture(t)
	// A newer snapshot that is damaged: passed over, and named.
	mustNot(t, os.WriteFile(filepath.Join(snapDir, "z.snap"), []byte(`{"snapshot":"converge","version":1,"identity":"`+identity+`","revision":99,"time":"2100-01-01T00:00:00Z","count":0}`+"\n"), 0o600))
	ctx := t.Context()
	known, unknownIdentity := 0, 0
	for _, d := range recoverable(t, data) {
		dir := t.TempDir()
		path := filepath.Join(dir, "store.db")
		damaged := d.make()
		mustNot(t, os.WriteFile(path, damaged, 0o600))
		s, rec, err := boltstore.OpenOrRecover[*item](path, snapDir)
		if err != nil {
			// Whose snapshots are whose cannot be told: only a named one.
			if !errors.Is(err, boltstore.ErrCorrupt) || !errors.Is(err, snapshot.ErrIdentity) || rec.Identity != "" {
				t.Fatalf("%s: OpenOrRecover: %v (identity %q)", d.name, err, rec.Identity)
			}
			assertUnchanged(t, path, damaged)
			unknownIdentity++
			s, rec, err = boltstore.OpenOrRecover[*item](path, snapPath)
			if err != nil {
				t.Fatalf("%s: OpenOrRecover of the named snapshot: %v", d.name, err)
			}
		} else if rec.Identity != identity || !passedOver(rec, rec.LastRevisionKnown) {
			t.Fatalf("%s: identity %q, skipped %+v, above %+v, want %q and the damaged newer snapshot", d.name, rec.Identity, rec.Skipped, rec.Above, identity)
		}
		base := int64(20) + boltstore.DefaultRevisionBump
		switch {
		case !rec.Recovered || !errors.Is(rec.Damage, boltstore.ErrCorrupt):
			t.Fatalf("%s: %+v, want a recovery from damage", d.name, rec)
		case rec.Snapshot != snapPath || rec.Restored.Snapshot.Revision != 20 || rec.Restored.Revision != base:
			t.Fatalf("%s: recovered from %s at %d, revision %d; want %s at 20, revision %d", d.name, rec.Snapshot, rec.Restored.Snapshot.Revision, rec.Restored.Revision, snapPath, base)
		case !strings.HasPrefix(rec.DamagedFile, path+".damaged-"):
			t.Fatalf("%s: the damaged file went to %s", d.name, rec.DamagedFile)
		}
		assertUnchanged(t, rec.DamagedFile, damaged)
		if from, through, ok := rec.Lost(); ok {
			known++
			if from != 21 || through != 25 {
				t.Fatalf("%s: lost revisions %d to %d, want 21 to 25", d.name, from, through)
			}
		}
		objs, rev, err := s.List(ctx, "")
		mustNot(t, err)
		if rev != base || len(objs) != len(want) {
			t.Fatalf("%s: %d objects at revision %d, want %d at %d", d.name, len(objs), rev, len(want), base)
		}
		for i, o := range objs {
			if o.Key != want[i].Key || !reflect.DeepEqual(o.Value, want[i].Value) {
				t.Fatalf("%s: object %q, want %q", d.name, o.Key, want[i].Key)
			}
		}
		if id := identityOf(t, s); id == identity || id != rec.Restored.Identity {
			t.Fatalf("%s: identity %q after the recovery, the damaged store's %q", d.name, id, identity)
		}
		mustNot(t, s.Close())
	}
	if known == 0 {
		t.Fatal("no damaged file told its revision")
	}
	t.Logf("%d damaged files did not tell their identity", unknownIdentity)
}

// passedOver reports whether rec passed over the fixture's snapshot at
// revision 99 as it should: above the damaged file's revision if that is
// known, else as damaged.
func passedOver(rec boltstore.Recovery, revisionKnown bool) bool {
	if revisionKnown {
		return len(rec.Skipped) == 0 && len(rec.Above) == 1 && rec.Above[0].Info.Revision == 99
	}
	return len(rec.Above) == 0 && len(rec.Skipped) == 1 && errors.Is(rec.Skipped[0].Err, snapshot.ErrDamaged)
}

// Without a good snapshot (none in the directory, only damaged ones, or
// no directory) the recovery fails with ErrCorrupt and the cause, and the
// damaged file stays where it is, as it was, alone.
func TestWithoutAGoodSnapshotTheDamagedFileIsLeftWhereItIs(t *testing.T) {
	_, damaged, _ := damagedStore(t) // its identity can be read
	damagedSnapDir := t.TempDir()
	mustNot(t, os.WriteFile(filepath.Join(damagedSnapDir, "a.snap"), []byte("{}\n"), 0o600))
	for name, tc := range map[string]struct {
		dir  string
		want error
	}{
		"an empty directory":     {t.TempDir(), snapshot.ErrNoSnapshot},
		"damaged snapshots only": {damagedSnapDir, snapshot.ErrNoSnapshot},
		"no directory":           {filepath.Join(t.TempDir(), "missing"), fs.ErrNotExist},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "store.db")
		mustNot(t, os.WriteFile(path, damaged, 0o600))
		_, rec, err := boltstore.OpenOrRecover[*item](path, tc.dir)
		if !errors.Is(err, boltstore.ErrCorrupt) || !errors.Is(err, tc.want) {
			t.Fatalf("%s: %v, want ErrCorrupt and %v", name, err, tc.want)
		}
		if rec.Recovered || !errors.Is(rec.Damage, boltstore.ErrCorrupt) {
			t.Fatalf("%s: %+v", name, rec)
		}
		assertUnchanged(t, path, damaged)
		entries, err := os.ReadDir(dir)
		mustNot(t, err)
		if len(entries) != 1 {
			t.Fatalf("%s: %d files beside the damaged one", name, len(entries)-1)
		}
	}
}

// A file that opens is opened, and nothing else happens; a file of
// another format is refused as Open refuses it, not recovered.
func TestOpenOrRecoverOpensAGoodFileAndRecoversOnlyDamage(t *testing.T) {
	s, path := openTemp(t)
	id := identityOf(t, s)
	mustNot(t, s.Close())
	s, rec, err := boltstore.OpenOrRecover[*item](path, filepath.Join(t.TempDir(), "none"))
	mustNot(t, err)
	if !reflect.DeepEqual(rec, boltstore.Recovery{}) || identityOf(t, s) != id {
		t.Fatalf("a good file: %+v", rec)
	}
	mustNot(t, s.Close())

	_, snapDir, _, _, _ := recoveryFixture(t)
	foreign := filepath.Join(t.TempDir(), "foreign.db")
	writeBolt(t, foreign, func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket([]byte("someone-else"))
		return err
	})
	if _, _, err := boltstore.OpenOrRecover[*item](foreign, snapDir); !errors.Is(err, boltstore.ErrFormat) {
		t.Fatalf("a foreign file: %v, want ErrFormat", err)
	}
}
