package boltstore_test

import (
	"bytes"
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
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
	"github.com/converge-go/converge/store/snapshot"
)

// fillItems creates, updates and deletes objects of s, so that its
// objects have revisions of their own and one revision is a delete.
func fillItems(t *testing.T, s store.Store[*item]) {
	t.Helper()
	ctx := t.Context()
	for i := range 12 {
		_, err := s.Create(ctx, fmt.Sprintf("app/%02d", i), &item{N: i, S: strings.Repeat("v", i)})
		mustNot(t, err)
	}
	obj, err := s.Get(ctx, "app/03")
	mustNot(t, err)
	_, err = s.Update(ctx, "app/03", &item{N: 33, S: "updated"}, obj.Revision)
	mustNot(t, err)
	obj, err = s.Get(ctx, "app/07")
	mustNot(t, err)
	_, err = s.Delete(ctx, "app/07", obj.Revision)
	mustNot(t, err)
}

// sources are the stores a snapshot is saved from: memory, bbolt, and
// each served over HTTP.
func sources(t *testing.T) map[string]store.Store[*item] {
	mem := func() store.Store[*item] { return store.NewMemory[*item]() }
	bolt := func() store.Store[*item] {
		s, _ := openTemp(t)
		return s
	}
	return map[string]store.Store[*item]{
		"memory":         mem(),
		"bolt":           bolt(),
		"memory on HTTP": httpstoretest.Serve[*item](t, mem(), httpstoretest.Options{}),
		"bolt on HTTP":   httpstoretest.Serve[*item](t, bolt(), httpstoretest.Options{}),
	}
}

// saveTo saves a snapshot of s in a file of dir and returns its path.
func saveTo(t *testing.T, dir string, s store.Store[*item]) (string, snapshot.Info) {
	t.Helper()
	path := filepath.Join(dir, "s.snap")
	info, err := snapshot.WriteFile(t.Context(), path, snapshot.Typed(s, nil))
	mustNot(t, err)
	return path, info
}

// restoreFile restores the snapshot file snap into a new store file.
func restoreFile(t *testing.T, snap string, opts ...boltstore.Option) (string, snapshot.Restored, error) {
	t.Helper()
	f, err := os.Open(snap)
	mustNot(t, err)
	defer f.Close()
	path := filepath.Join(t.TempDir(), "restored.db")
	restored, err := boltstore.Restore(path, f, opts...)
	return path, restored, err
}

// A store restored from a snapshot of memory, bbolt or either served over
// HTTP holds the snapshot's keys and values, under a new identity; its
// revision is the snapshot's plus the bump, every object at it, every
// earlier revision compacted (a watch after one fails with ErrCompacted),
// and its next write comes after it; reopened, it is the same.
func TestARestoredStoreHoldsTheSnapshotUnderANewIdentityAboveTheBump(t *testing.T) {
	for name, src := range sources(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			fillItems(t, src)
			want, _, err := src.List(ctx, "")
			mustNot(t, err)
			snap, info := saveTo(t, t.TempDir(), src)
			path, restored, err := restoreFile(t, snap)
			mustNot(t, err)
			base := info.Revision + boltstore.DefaultRevisionBump
			if restored.Revision != base || restored.Snapshot != info {
				t.Fatalf("Restore = %+v, want revision %d of %+v", restored, base, info)
			}
			s := openAt(t, path)
			objs, rev, err := s.List(ctx, "")
			mustNot(t, err)
			if rev != base || len(objs) != len(want) {
				t.Fatalf("List: %d objects at revision %d, want %d at %d", len(objs), rev, len(want), base)
			}
			for i, o := range objs {
				if o.Key != want[i].Key || !reflect.DeepEqual(o.Value, want[i].Value) || o.Revision != base || o.CreateRevision != base {
					t.Fatalf("object %d: %+v %+v, want %q %+v at revision %d", i, o, *o.Value, want[i].Key, *want[i].Value, base)
				}
			}
			id := identityOf(t, s)
			if id == info.Identity || id != restored.Identity || info.Identity == "" {
				t.Fatalf("identity %q, restored %q, the snapshot's %q", id, restored.Identity, info.Identity)
			}
			for _, old := range []int64{0, info.Revision, base - 1} {
				if _, err := s.Watch(ctx, "", old); !errors.Is(err, store.ErrCompacted) {
					t.Fatalf("Watch after revision %d from before the restore: %v, want ErrCompacted", old, err)
				}
			}
			w, err := s.Watch(ctx, "", base)
			mustNot(t, err)
			defer w.Stop()
			later, err := s.Create(ctx, "later", &item{N: 1})
			mustNot(t, err)
			if later.Revision != base+1 || nextEvent(t, w).Object.Revision != base+1 {
				t.Fatalf("a later write at revision %d, want %d", later.Revision, base+1)
			}
			w.Stop()
			mustNot(t, s.Close())
			s = openAt(t, path)
			if identityOf(t, s) != id || mustRevisionOf(t, s) != base+1 {
				t.Fatal("the restored store changed across a reopen")
			}
		})
	}
}

// WithRevisionBump sets the bump; a negative one is ErrInvalid.
func TestTheRevisionBumpIsConfigurable(t *testing.T) {
	src := store.NewMemory[*item]()
	fillItems(t, src)
	snap, info := saveTo(t, t.TempDir(), src)
	path, restored, err := restoreFile(t, snap, boltstore.WithRevisionBump(10))
	mustNot(t, err)
	if restored.Revision != info.Revision+10 {
		t.Fatalf("revision %d, want %d", restored.Revision, info.Revision+10)
	}
	assertRevision(t, openAt(t, path), info.Revision+10)
	if _, _, err := restoreFile(t, snap, boltstore.WithRevisionBump(-1)); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("a negative bump: %v, want ErrInvalid", err)
	}
}

// Restore refuses a path where a file exists, and leaves it; a damaged
// snapshot (every truncation of one) leaves no file at all.
func TestRestoreRefusesAnExistingFileAndADamagedSnapshotLeavesNoFile(t *testing.T) {
	src := store.NewMemory[*item]()
	fillItems(t, src)
	snap, _ := saveTo(t, t.TempDir(), src)
	data, err := os.ReadFile(snap)
	mustNot(t, err)

	dir := t.TempDir()
	path := filepath.Join(dir, "store.db")
	mustNot(t, os.WriteFile(path, []byte("mine"), 0o600))
	_, err = boltstore.Restore(path, bytes.NewReader(data))
	if !errors.Is(err, fs.ErrExist) || !errors.Is(err, store.ErrExists) {
		t.Fatalf("Restore over a file: %v, want fs.ErrExist and store.ErrExists", err)
	}
	assertUnchanged(t, path, []byte("mine"))

	path = filepath.Join(dir, "new.db")
	for n := 0; n < len(data); n += 1 + n/8 {
		_, err := boltstore.Restore(path, bytes.NewReader(data[:n]))
		if !errors.Is(err, snapshot.ErrDamaged) {
			t.Fatalf("Restore of %d of %d bytes: %v, want snapshot.ErrDamaged", n, len(data), err)
		}
		entries, err := os.ReadDir(dir)
		mustNot(t, err)
		if len(entries) != 1 {
			t.Fatalf("Restore of a damaged snapshot left %d files", len(entries)-1)
		}
	}
}
