package main

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore"
)

type (
	appSpec   struct{ Replicas int }
	appStatus struct{ Ready int }
	app       = resource.Resource[appSpec, appStatus]
)

func TestTheServerAppliesTheAPIServerLayerToItsHTTPClients(t *testing.T) {
	s := start(t, t.TempDir())
	c := client[*app](t, s.url, s.token(t))
	ctx := t.Context()
	const key, fin = "app/web", "app/cleanup"

	obj, err := c.Create(ctx, key, &app{Meta: apistore.Meta{Generation: 7, Finalizers: []string{fin}}, Spec: appSpec{Replicas: 1}})
	if err != nil || obj.Value.Generation != 1 {
		t.Fatalf("create: generation %v (%v); want 1, whatever the writer says", obj.Value, err)
	}
	obj, err = resource.PutSpec(ctx, c, key, appSpec{Replicas: 3})
	if err != nil || obj.Value.Generation != 2 {
		t.Fatalf("a spec change: generation %v (%v); want it bumped to 2", obj.Value, err)
	}
	obj = writeStatusAndSpec(t, c, obj)

	rev, marked, err := c.DeleteWith(ctx, key, obj.Revision, apistore.Background)
	if err != nil || !marked {
		t.Fatalf("a delete of an object with a finalizer: marked %v (%v); want it marked", marked, err)
	}
	got, err := c.Get(ctx, key)
	switch {
	case err != nil:
		t.Fatalf("a deleted object with a finalizer is gone: %v; want it marked and readable", err)
	case got.Revision != rev || got.Value.Deletion == nil || got.Value.Deletion.Revision != obj.Revision:
		t.Fatalf("the deleted object with a finalizer: %+v at %d; want it marked at the revision deleted (%d)", got.Value.Meta, got.Revision, obj.Revision)
	case got.Value.Spec != (appSpec{Replicas: 3}):
		t.Errorf("the marked object lost its spec: %+v", got.Value.Spec)
	}
	more := *got.Value
	more.Finalizers = []string{fin, "app/other"}
	if _, err := c.Update(ctx, key, &more, got.Revision); !errors.Is(err, apistore.ErrDeleting) || !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a finalizer added to a marked object: %v; want ErrDeleting and ErrInvalid", err)
	}
	if _, err := c.Create(ctx, key, &app{Spec: appSpec{Replicas: 1}}); !errors.Is(err, apistore.ErrDeleting) || !errors.Is(err, store.ErrExists) {
		t.Errorf("a create of a marked key: %v; want ErrDeleting and ErrExists", err)
	}
	done := *got.Value
	done.Finalizers = nil
	if _, deleted, err := c.Replace(ctx, key, &done, got.Revision); err != nil || !deleted {
		t.Fatalf("removing the last finalizer: deleted %v (%v); want the object deleted", deleted, err)
	}
	if _, err := c.Get(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after its last finalizer was removed the marked object is still there: %v", err)
	}
}

// writeStatusAndSpec checks, on obj at generation 2, that the status
// belongs to the server: a status write keeps the spec and generation, and
// a spec write keeps the stored status. It returns the object as left.
func writeStatusAndSpec(t *testing.T, c *httpstore.Client[*app], obj store.Object[*app]) store.Object[*app] {
	t.Helper()
	status := *obj.Value
	status.Status, status.Spec = appStatus{Ready: 3}, appSpec{Replicas: 99}
	obj, err := c.UpdateStatus(t.Context(), obj.Key, &status, obj.Revision)
	if err != nil || obj.Value.Status != (appStatus{Ready: 3}) || obj.Value.Spec != (appSpec{Replicas: 3}) || obj.Value.Generation != 2 {
		t.Fatalf("a status write: %+v (%v); want the status written, the spec and generation 2 kept", obj.Value, err)
	}
	spec := *obj.Value
	spec.Status = appStatus{Ready: 9}
	obj, err = c.Update(t.Context(), obj.Key, &spec, obj.Revision)
	if err != nil || obj.Value.Generation != 2 || obj.Value.Status != (appStatus{Ready: 3}) {
		t.Fatalf("a spec write of the same spec with another status: %+v (%v); want generation 2 and the stored status kept", obj.Value, err)
	}
	return obj
}

func TestTheStoresIdentityIsItsFilesKeptAcrossRestartsAndNewForANewFile(t *testing.T) {
	dir := t.TempDir()
	s := start(t, dir)
	id, err := client[raw](t, s.url, s.token(t)).Identity(t.Context())
	if err != nil || id == "" {
		t.Fatalf("identity %q (%v)", id, err)
	}
	s.stop(t)
	s = start(t, dir)
	if again, err := client[raw](t, s.url, s.token(t)).Identity(t.Context()); err != nil || again != id {
		t.Errorf("identity after a restart %q (%v); want %q", again, err, id)
	}
	s.stop(t)
	if err := os.Remove(filepath.Join(dir, StoreFile)); err != nil {
		t.Fatal(err)
	}
	s = start(t, dir)
	if fresh, err := client[raw](t, s.url, s.token(t)).Identity(t.Context()); err != nil || fresh == id {
		t.Errorf("identity of a new store file in the same directory %q (%v); want another than %q", fresh, err, id)
	}
}

func TestAStoreFileAnotherProcessHoldsIsAClearErrorWithExitFour(t *testing.T) {
	dir := t.TempDir()
	first := start(t, dir)
	tok := first.token(t)
	second := launch(t, dir, "-lock-timeout", "50ms")
	if code := second.refused(t); code != exitLocked {
		t.Errorf("exit %d; want %d\n%s", code, exitLocked, second.stderr)
	}
	path := filepath.Join(dir, StoreFile)
	if msg := second.stderr.String(); !strings.Contains(msg, "the store file "+path+" is held by another process") {
		t.Errorf("the error does not say that another process holds %s:\n%s", path, msg)
	}
	if got := first.token(t); got != tok {
		t.Error("the refused server changed the token file of the one serving")
	}
	if _, err := client[raw](t, first.url, tok).Revision(t.Context()); err != nil {
		t.Errorf("the first server after the second was refused: %v", err)
	}
}

func TestADamagedStoreFileIsAClearErrorWithExitThreeAndIsLeftAsItIs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		make  func(t *testing.T, path string)
		wants string
	}{
		{"not a bbolt file", func(t *testing.T, path string) {
			write(t, path, strings.Repeat("not a store. ", 1000))
		}, "is damaged"},
		{"truncated", func(t *testing.T, path string) {
			s := start(t, filepath.Dir(path))
			c := client[raw](t, s.url, s.token(t))
			for _, k := range []string{"a", "b", "c"} {
				if _, err := c.Create(t.Context(), k, raw(`{"spec":"`+strings.Repeat(k, 3000)+`"}`)); err != nil {
					t.Fatal(err)
				}
			}
			s.stop(t)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}, "is damaged"},
		{"another program's bbolt file", func(t *testing.T, path string) {
			db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("theirs")); return err })
			if err := errors.Join(err, db.Close()); err != nil {
				t.Fatal(err)
			}
		}, "is not a store file of this program"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, StoreFile)
			tc.make(t, path)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s := launch(t, dir)
			if code := s.refused(t); code != exitDamaged {
				t.Errorf("exit %d; want %d\n%s", code, exitDamaged, s.stderr)
			}
			if msg := s.stderr.String(); !strings.Contains(msg, path+" "+tc.wants) {
				t.Errorf("the error does not say %q of %s:\n%s", tc.wants, path, msg)
			}
			if after, err := os.ReadFile(path); err != nil || !bytes.Equal(before, after) {
				t.Errorf("the refused file was changed (%v)", err)
			}
		})
	}
}

func TestSIGTERMStopsTheServerCleanlyWhileAWatchIsOpen(t *testing.T) {
	s := start(t, t.TempDir())
	c := client[raw](t, s.url, s.token(t), httpstore.WithWatchTimeout(patience))
	w, err := c.Watch(t.Context(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := c.Create(t.Context(), "a", raw(`{"spec":1}`)); err != nil {
		t.Fatal(err)
	}
	if ev := <-w.Events(); ev.Type != store.Created {
		t.Fatalf("the watch delivered %v", ev)
	}
	// The manager's shutdown fails (exit 1) if a stream holds it past half
	// its timeout: exit 0 says the watch ended at once.
	if code := s.stop(t); code != exitOK {
		t.Fatalf("SIGTERM with a watch open: exit %d; want 0\n%s", code, s.stderr)
	}
	lines := strings.Split(strings.TrimSpace(s.stderr.String()), "\n")
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "msg=stopped") }) {
		t.Errorf("no stop in the log:\n%s", s.stderr)
	}
}

func TestOnlyLoopbackAddressesGoWithoutTheWarningOfServingBeyondLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7017": true, "[::1]:7017": true, "localhost:7017": true, "127.0.0.2:1": true,
		":7017": false, "0.0.0.0:7017": false, "[::]:7017": false, "192.0.2.1:7017": false, "store.example:7017": false,
	} {
		if got := loopback(addr); got != want {
			t.Errorf("loopback(%q) = %v; want %v", addr, got, want)
		}
	}
}

func TestTheURLOfAServerOnEveryInterfaceNamesLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr string
		tls  bool
		want string
	}{
		{"127.0.0.1:7017", false, "http://127.0.0.1:7017/store"},
		{"0.0.0.0:7017", false, "http://127.0.0.1:7017/store"},
		{"[::]:7017", true, "https://127.0.0.1:7017/store"},
		{"[::1]:7017", false, "http://[::1]:7017/store"},
	} {
		addr, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := storeURL(addr, tc.tls); got != tc.want {
			t.Errorf("storeURL(%s, tls %v) = %s; want %s", tc.addr, tc.tls, got, tc.want)
		}
	}
}
