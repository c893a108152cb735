package boltstore_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/converge-go/converge/reconcile/checkpointtest"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
	"github.com/converge-go/converge/store/storetest"
)

// A controller started from its checkpoint while its bolt store is
// stopped reconciles the store as it is once it serves, however its file
// was restored meanwhile: a copy of an older file (the same identity, a
// lower revision: another history, re-listed whole, Health.History saying
// so), of an empty one, the file rolled forward, emptied, or a new file
// (another identity); a checkpoint seen in the future or past its maximum
// age is refused (checkpointtest.Run).
func TestFromACheckpointTheStoreIsReconciledAsItIsOnceItServes(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpointtest.Backend { return newBoltBackend(t, false) }, checkpointtest.Options{})
}

// The same over HTTP: the bolt store is served by httpstore, and its file
// replaced behind the server, as convergestore restarted on a copy.
func TestFromACheckpointTheStoreServedOverHTTPIsReconciledAsItIsOnceItServes(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpointtest.Backend { return newBoltBackend(t, true) }, checkpointtest.Options{})
}

// boltBackend is a bolt file behind a checkpointtest.Switch (served over
// HTTP if asked): Stop closes the file, Start opens whichever file is
// current, a copy is a copy of the closed file.
type boltBackend struct {
	dir    string
	path   string
	copies int
	cur    *boltstore.Store[*storetest.Value]
	sw     checkpointtest.Switch[*storetest.Value]
	client store.Store[*storetest.Value]
}

func newBoltBackend(t *testing.T, overHTTP bool) *boltBackend {
	b := &boltBackend{dir: t.TempDir()}
	b.path = filepath.Join(b.dir, "store.db")
	b.client = &b.sw
	if overHTTP {
		b.client = httpstoretest.Serve[*storetest.Value](t, &b.sw, httpstoretest.Options{})
	}
	b.Start(t)
	t.Cleanup(func() {
		b.sw.Stop()
		if b.cur != nil {
			_ = b.cur.Close()
		}
	})
	return b
}

func (b *boltBackend) Store() store.Store[*storetest.Value] { return b.client }

func (b *boltBackend) Stop(t *testing.T) {
	b.sw.Stop()
	if err := b.cur.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	b.cur = nil
}

func (b *boltBackend) Start(t *testing.T) {
	s, err := boltstore.Open[*storetest.Value](b.path)
	if err != nil {
		t.Fatalf("Open(%s): %v", b.path, err)
	}
	b.cur = s
	b.sw.Serve(s, "")
}

func (b *boltBackend) Copy(t *testing.T) func(t *testing.T) {
	b.copies++
	path := filepath.Join(b.dir, fmt.Sprintf("copy-%d.db", b.copies))
	copyFile(t, b.path, path)
	return func(t *testing.T) {
		b.path = path
		b.Start(t)
	}
}

func (b *boltBackend) StartFresh(t *testing.T) {
	b.copies++
	b.path = filepath.Join(b.dir, fmt.Sprintf("fresh-%d.db", b.copies))
	b.Start(t)
}

// copyFile copies the file at from to to.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
