package boltstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
)

// Each write takes the next store-wide revision, an update keeps the
// object's create revision, Get returns a freshly decoded copy of the last
// write, and a deleted key is ErrNotFound.
func TestEachWriteTakesTheNextRevisionAndGetReadsItBack(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()

	a, err := s.Create(ctx, "a", &item{N: 1})
	mustNot(t, err)
	if a.Revision != 1 || a.CreateRevision != 1 {
		t.Fatalf("first create: revision %d, create revision %d; want 1, 1", a.Revision, a.CreateRevision)
	}
	b, err := s.Create(ctx, "b", &item{N: 2})
	mustNot(t, err)
	a2, err := s.Update(ctx, "a", &item{N: 3}, a.Revision)
	mustNot(t, err)
	if a2.Revision != 3 || a2.CreateRevision != 1 {
		t.Fatalf("update: revision %d, create revision %d; want 3, 1", a2.Revision, a2.CreateRevision)
	}
	got, err := s.Get(ctx, "a")
	mustNot(t, err)
	if got.Value.N != 3 || got.Revision != 3 || got.CreateRevision != 1 || got.Key != "a" {
		t.Fatalf("Get(a) = %+v", got)
	}
	if got.Value == a2.Value {
		t.Fatal("Get returned the caller's pointer; want a freshly decoded value")
	}
	delRev, err := s.Delete(ctx, "b", b.Revision)
	mustNot(t, err)
	if delRev != 4 {
		t.Fatalf("delete revision %d, want 4", delRev)
	}
	if _, err := s.Get(ctx, "b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get after delete: %v, want ErrNotFound", err)
	}
	if rev, _ := s.Revision(ctx); rev != 4 {
		t.Fatalf("Revision = %d, want 4", rev)
	}
}

func TestFailedConditionsWriteNothing(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	a, err := s.Create(ctx, "a", &item{N: 1})
	mustNot(t, err)
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"create existing", second(s.Create(ctx, "a", &item{N: 2})), store.ErrExists},
		{"update stale", second(s.Update(ctx, "a", &item{N: 2}, a.Revision+1)), store.ErrConflict},
		{"update missing", second(s.Update(ctx, "x", &item{N: 2}, 1)), store.ErrNotFound},
		{"delete stale", second(s.Delete(ctx, "a", 0)), store.ErrConflict},
		{"delete missing", second(s.Delete(ctx, "x", 1)), store.ErrNotFound},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	assertRevision(t, s, a.Revision)
	got, err := s.Get(ctx, "a")
	mustNot(t, err)
	if got.Value.N != 1 {
		t.Fatalf("value changed to %d by failed writes", got.Value.N)
	}
}

func TestInvalidInputIsRefused(t *testing.T) {
	s, _ := openTemp(t, boltstore.WithMaxValueSize(64))
	ctx := t.Context()
	big := &item{S: strings.Repeat("x", 64)}
	fine := &item{N: 1}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"empty key", second(s.Create(ctx, "", fine))},
		{"long key", second(s.Create(ctx, strings.Repeat("k", store.MaxKeyLen+1), fine))},
		{"invalid UTF-8", second(s.Create(ctx, "bad\xff", fine))},
		{"NUL", second(s.Create(ctx, "a\x00b", fine))},
		{"nil value", second(s.Create(ctx, "a", nil))},
		{"oversized value", second(s.Create(ctx, "a", big))},
		{"oversized update", second(s.Update(ctx, "a", big, 1))},
		{"negative revision", second(s.Update(ctx, "a", fine, -1))},
		{"negative delete revision", second(s.Delete(ctx, "a", -1))},
		{"guard with empty key", second(s.Create(ctx, "a", fine, store.Guard{}))},
		{"guard with negative revision", second(s.Create(ctx, "a", fine, store.Guard{Key: "g", Revision: -1}))},
		{"Get empty key", second(s.Get(ctx, ""))},
		{"List bad prefix", listErr(s.List(ctx, "\xff"))},
		{"Watch bad prefix", second(s.Watch(ctx, "\x00", 0))},
		{"Watch negative", second(s.Watch(ctx, "", -1))},
		{"Compact negative", s.Compact(ctx, -1)},
		{"Compact future", s.Compact(ctx, 1)},
	} {
		if !errors.Is(tc.err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", tc.name, tc.err)
		}
	}
	assertRevision(t, s, 0)
}

// failingCodec fails to encode values with N < 0.
type failingCodec struct{ store.JSON[*item] }

func (c failingCodec) Marshal(v *item) ([]byte, error) {
	if v.N < 0 {
		return nil, errors.New("negative N")
	}
	return c.JSON.Marshal(v)
}

func TestEncodeErrorIsInvalid(t *testing.T) {
	path := t.TempDir() + "/store.db"
	s, err := boltstore.Open[*item](path, boltstore.WithCodec[*item](failingCodec{}))
	mustNot(t, err)
	defer s.Close()
	_, err = s.Create(t.Context(), "a", &item{N: -1})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Create with a value the codec refuses: %v, want ErrInvalid", err)
	}
	assertRevision(t, s, 0)
}

// A write whose guards all hold goes through; one failing guard among
// holding ones fails Create, Update or Delete with ErrGuardFailed and writes
// nothing, revision included. Guards check a key's revision, its create
// revision (Created), or its absence (revision 0).
func TestWriteWithAFailingGuardIsRefusedAndWritesNothing(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	lease, err := s.Create(ctx, "lease", &item{N: 1})
	mustNot(t, err)
	lease2, err := s.Update(ctx, "lease", &item{N: 2}, lease.Revision)
	mustNot(t, err)

	holds := []store.Guard{
		{Key: "lease", Revision: lease2.Revision},
		{Key: "lease", Revision: lease.Revision, Created: true},
		{Key: "absent", Revision: 0},
	}
	fails := []store.Guard{
		{Key: "lease", Revision: lease.Revision},
		{Key: "lease", Revision: lease2.Revision, Created: true},
		{Key: "lease", Revision: 0},
		{Key: "absent", Revision: 1},
		{Key: "absent", Revision: 1, Created: true},
	}
	for i, g := range fails {
		before := mustRevisionOf(t, s)
		_, err := s.Create(ctx, "k", &item{N: i}, append(holds, g)...)
		if !errors.Is(err, store.ErrGuardFailed) {
			t.Fatalf("guard %+v: %v, want ErrGuardFailed", g, err)
		}
		assertRevision(t, s, before)
		if _, err := s.Get(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("guard %+v failed but the key was written: %v", g, err)
		}
	}
	k, err := s.Create(ctx, "k", &item{N: 9}, holds...)
	mustNot(t, err)
	k2, err := s.Update(ctx, "k", &item{N: 10}, k.Revision, holds...)
	mustNot(t, err)
	_, err = s.Delete(ctx, "k", k2.Revision, store.Guard{Key: "lease", Revision: lease.Revision})
	if !errors.Is(err, store.ErrGuardFailed) {
		t.Fatalf("Delete with a failing guard: %v", err)
	}
	_, err = s.Delete(ctx, "k", k2.Revision, holds...)
	mustNot(t, err)
}

// Close ends every watch with ErrUnavailable, and every operation after it
// (a second Close included) fails with ErrUnavailable.
func TestClosedStoreIsUnavailable(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	obj, err := s.Create(ctx, "a", &item{N: 1})
	mustNot(t, err)
	w, err := s.Watch(ctx, "", obj.Revision)
	mustNot(t, err)
	defer w.Stop()

	mustNot(t, s.Close())
	for range w.Events() {
		t.Fatal("event after Close")
	}
	if !errors.Is(w.Err(), store.ErrUnavailable) {
		t.Fatalf("watch after Close: %v, want ErrUnavailable", w.Err())
	}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"Get", second(s.Get(ctx, "a"))},
		{"List", listErr(s.List(ctx, ""))},
		{"Create", second(s.Create(ctx, "b", &item{}))},
		{"Update", second(s.Update(ctx, "a", &item{}, obj.Revision))},
		{"Delete", second(s.Delete(ctx, "a", obj.Revision))},
		{"Watch", second(s.Watch(ctx, "", 0))},
		{"Revision", second(s.Revision(ctx))},
		{"Compact", s.Compact(ctx, 0)},
		{"Close", s.Close()},
	} {
		if !errors.Is(tc.err, store.ErrUnavailable) {
			t.Errorf("%s after Close: %v, want ErrUnavailable", tc.name, tc.err)
		}
	}
}

// Operations under a cancelled context fail with context.Canceled and write
// nothing.
func TestCancelledContextFailsOperationsAndWritesNothing(t *testing.T) {
	s, _ := openTemp(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, err := range []error{
		second(s.Get(ctx, "a")),
		second(s.Create(ctx, "a", &item{})),
		second(s.Watch(ctx, "", 0)),
		second(s.Revision(ctx)),
	} {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	}
	assertRevision(t, s, 0)
}

// TestOptionsOutOfRangeAreRefusedAndZeroSelectsTheDefault: a negative or
// oversized option, a nil option or a codec of another type makes Open fail
// with store.ErrInvalid; zero selects the default.
func TestOptionsOutOfRangeAreRefusedAndZeroSelectsTheDefault(t *testing.T) {
	path := t.TempDir() + "/store.db"
	for _, opt := range []boltstore.Option{
		boltstore.WithHistory(-1),
		boltstore.WithMaxValueSize(-1),
		boltstore.WithMaxValueSize(1 << 31),
		boltstore.WithWatchBuffer(-1),
		boltstore.WithLockTimeout(-time.Second),
		boltstore.WithCodec[*item](nil),
		boltstore.WithCodec[int](store.JSON[int]{}),
		nil,
	} {
		if _, err := boltstore.Open[*item](path, opt); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Open with a bad option: %v, want ErrInvalid", err)
		}
	}
	s, err := boltstore.Open[*item](path, boltstore.WithHistory(0), boltstore.WithMaxValueSize(0),
		boltstore.WithWatchBuffer(0), boltstore.WithLockTimeout(0), boltstore.WithCodec[*item](store.JSON[*item]{}))
	if err != nil {
		t.Fatalf("Open with zero options: %v", err)
	}
	s.Close()
}

func mustNot(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func second[A any](_ A, err error) error { return err }

func listErr[A, B any](_ A, _ B, err error) error { return err }

func mustRevisionOf(t *testing.T, s *boltstore.Store[*item]) int64 {
	t.Helper()
	rev, err := s.Revision(t.Context())
	mustNot(t, err)
	return rev
}

func assertRevision(t *testing.T, s *boltstore.Store[*item], want int64) {
	t.Helper()
	if got := mustRevisionOf(t, s); got != want {
		t.Fatalf("store revision %d, want %d", got, want)
	}
}
