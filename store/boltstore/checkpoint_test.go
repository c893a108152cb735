package boltstore_test

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/checkpoint"
)

// openCheckpoint opens the checkpoint at path, closed at cleanup.
func openCheckpoint(t *testing.T, path string, opts ...boltstore.Option) *boltstore.Checkpoint[*item] {
	t.Helper()
	cp, err := boltstore.OpenCheckpoint[*item](path, opts...)
	if err != nil {
		t.Fatalf("OpenCheckpoint(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = cp.Close() })
	return cp
}

// cpModel is what a checkpoint must hold after the batches given to apply.
type cpModel struct {
	st      checkpoint.State[*item]
	objects map[string]store.Object[*item]
}

func (m *cpModel) apply(b checkpoint.Batch[*item]) {
	if b.Replace || m.objects == nil {
		m.objects = map[string]store.Object[*item]{}
	}
	for _, obj := range b.Put {
		m.objects[obj.Key] = obj
	}
	for _, key := range b.Delete {
		delete(m.objects, key)
	}
	m.st = checkpoint.State[*item]{Identity: b.Identity, Prefix: b.Prefix, Revision: b.Revision, Seen: b.Seen}
	for _, key := range slices.Sorted(maps.Keys(m.objects)) {
		m.st.Objects = append(m.st.Objects, m.objects[key])
	}
}

// requireState checks that cp holds want.
func requireState(t *testing.T, cp *boltstore.Checkpoint[*item], want checkpoint.State[*item]) {
	t.Helper()
	got, err := cp.Load()
	mustNot(t, err)
	if !sameState(got, want) {
		t.Fatalf("Load = %s, want %s", describeState(got), describeState(want))
	}
}

func sameState(a, b checkpoint.State[*item]) bool {
	if a.Identity != b.Identity || a.Prefix != b.Prefix || a.Revision != b.Revision || !a.Seen.Equal(b.Seen) || len(a.Objects) != len(b.Objects) {
		return false
	}
	for i := range a.Objects {
		x, y := a.Objects[i], b.Objects[i]
		if x.Key != y.Key || x.Revision != y.Revision || x.CreateRevision != y.CreateRevision || *x.Value != *y.Value {
			return false
		}
	}
	return true
}

func describeState(st checkpoint.State[*item]) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{%s %q rev %d seen %v:", st.Identity, st.Prefix, st.Revision, st.Seen)
	for _, obj := range st.Objects {
		fmt.Fprintf(&b, " %s@%d/%d=%+v", obj.Key, obj.Revision, obj.CreateRevision, *obj.Value)
	}
	return b.String() + "}"
}

// cpObject is a checkpoint's object key at rev, created at rev-1 or rev.
func cpObject(key string, rev int64, n int) store.Object[*item] {
	return store.Object[*item]{Key: key, Value: &item{N: n, S: strings.Repeat("v", n%300)}, Revision: rev, CreateRevision: max(1, rev-1)}
}

// A checkpoint reads back as written, whole batches and the changes of
// later ones, across a reopen; an empty one is checkpoint.ErrNone.
func TestACheckpointReadsBackAsWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.db")
	cp := openCheckpoint(t, path)
	if _, err := cp.Load(); !errors.Is(err, checkpoint.ErrNone) {
		t.Fatalf("Load of a new checkpoint: %v, want ErrNone", err)
	}
	seen := time.Unix(1_800_000_000, 123456789)
	var m cpModel
	first := checkpoint.Batch[*item]{Identity: "bolt:X", Prefix: "app/", Revision: 50, Seen: seen, Replace: true}
	for i := range 200 {
		first.Put = append(first.Put, cpObject(fmt.Sprintf("app/%03d", i), int64(1+i%50), i))
	}
	first.Put = append(first.Put, store.Object[*item]{Key: "app/big", Value: &item{S: strings.Repeat("big", 3000)}, Revision: 7, CreateRevision: 7})
	for _, b := range []checkpoint.Batch[*item]{
		first,
		{Identity: "bolt:X", Prefix: "app/", Revision: 60, Seen: seen.Add(time.Second),
			Put: []store.Object[*item]{cpObject("app/001", 60, 1001), cpObject("app/new", 59, 7)}, Delete: []string{"app/002", "app/big", "app/absent"}},
		{Identity: "bolt:X", Prefix: "app/", Revision: 61, Seen: seen.Add(2 * time.Second)},
		{Identity: "bolt:Y", Prefix: "app/", Revision: 3, Seen: seen.Add(3 * time.Second), Replace: true,
			Put: []store.Object[*item]{cpObject("app/001", 3, 1)}},
	} {
		mustNot(t, cp.Write(b))
		m.apply(b)
		requireState(t, cp, m.st)
	}
	mustNot(t, cp.Close())
	requireState(t, openCheckpoint(t, path), m.st)
}

// A batch that checkpoint.Batch.Check refuses, or whose values the codec
// refuses, writes nothing and matches checkpoint.ErrInvalid and
// store.ErrInvalid.
func TestABadBatchWritesNothing(t *testing.T) {
	cp := openCheckpoint(t, filepath.Join(t.TempDir(), "cp.db"))
	good := checkpoint.Batch[*item]{Revision: 5, Seen: time.Unix(1_800_000_000, 0), Replace: true, Put: []store.Object[*item]{cpObject("a", 5, 1)}}
	mustNot(t, cp.Write(good))
	var m cpModel
	m.apply(good)
	for name, b := range map[string]checkpoint.Batch[*item]{
		"a key twice":        {Revision: 6, Put: []store.Object[*item]{cpObject("b", 6, 1)}, Delete: []string{"b"}},
		"a newer object":     {Revision: 6, Put: []store.Object[*item]{cpObject("b", 7, 1)}},
		"an invalid key":     {Revision: 6, Delete: []string{""}},
		"outside the prefix": {Revision: 6, Prefix: "p/", Put: []store.Object[*item]{cpObject("b", 6, 1)}},
		"a nil value":        {Revision: 6, Put: []store.Object[*item]{{Key: "b", Revision: 6, CreateRevision: 6}}},
	} {
		err := cp.Write(b)
		if !errors.Is(err, checkpoint.ErrInvalid) || !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: Write: %v, want ErrInvalid", name, err)
		}
	}
	requireState(t, cp, m.st)
}

// A bbolt file that is no checkpoint (a store's file) is refused with
// ErrFormat and left as it is; a checkpoint is held by one Checkpoint at a
// time.
func TestAFileThatIsNoCheckpointIsLeftAsItIs(t *testing.T) {
	s, path := openTemp(t)
	mustNot(t, s.Close())
	before, err := os.ReadFile(path)
	mustNot(t, err)
	if _, err := boltstore.OpenCheckpoint[*item](path); !errors.Is(err, boltstore.ErrFormat) {
		t.Fatalf("OpenCheckpoint of a store's file: %v, want ErrFormat", err)
	}
	assertUnchanged(t, path, before)

	cpPath := filepath.Join(t.TempDir(), "cp.db")
	openCheckpoint(t, cpPath)
	if _, err := boltstore.OpenCheckpoint[*item](cpPath, boltstore.WithLockTimeout(time.Millisecond)); !errors.Is(err, boltstore.ErrLocked) {
		t.Fatalf("a second OpenCheckpoint: %v, want ErrLocked", err)
	}
}
