package etcdstore_test

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/converge-go/converge/reconcile/checkpointtest"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
	"github.com/converge-go/converge/store/storetest"
)

// A controller started from its checkpoint while its etcd member is
// stopped reconciles the store as it is once the member serves, however
// its data was restored meanwhile: an older copy of its data directory
// (the same cluster and identity record, a lower revision: another
// history, re-listed whole, Health.History saying so), a copy made before
// any write, the data rolled forward, emptied, or a new data directory
// (another identity record); a checkpoint seen in the future or past its
// maximum age is refused (checkpointtest.Run).
func TestFromACheckpointTheStoreIsReconciledAsItIsOnceItServes(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpointtest.Backend { return newEtcdBackend(t) },
		checkpointtest.Options{Heartbeat: 200 * time.Millisecond})
}

// The same, with the etcd store served over HTTP and the controller a
// client of the server, which serves on while the member is stopped,
// copied or replaced.
func TestFromACheckpointTheStoreServedOverHTTPIsReconciledAsItIsOnceItServes(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpointtest.Backend {
		b := newEtcdBackend(t)
		b.served = httpstoretest.Serve[*storetest.Value](t, b.s, httpstoretest.Options{})
		return b
	}, checkpointtest.Options{Heartbeat: 200 * time.Millisecond})
}

// etcdBackend is a one-member cluster on fixed loopback ports: Stop stops
// the member, Start starts it on whichever data directory is current, a
// copy is a copy of the stopped member's directory. The store is an
// etcdstore.Store of a client of the member's endpoint, which outlives
// every restart.
type etcdBackend struct {
	base         string
	dir          string
	dirs         int
	client, peer url.URL
	m            *member
	s            *etcdstore.Store[*storetest.Value]
	served       store.Store[*storetest.Value] // s served over HTTP, if set
}

func newEtcdBackend(t *testing.T) *etcdBackend {
	addrs := freePorts(t, 2)
	b := &etcdBackend{
		base:   t.TempDir(),
		client: url.URL{Scheme: "http", Host: addrs[0]},
		peer:   url.URL{Scheme: "http", Host: addrs[1]},
	}
	b.dir = b.newDir(t)
	b.Start(t)
	s, err := etcdstore.New[*storetest.Value](newClient(t, nil, b.client.String()), "cp/")
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	b.s = s
	return b
}

// newDir returns the path of a new data directory (not made).
func (b *etcdBackend) newDir(*testing.T) string {
	b.dirs++
	return filepath.Join(b.base, fmt.Sprintf("data-%d", b.dirs))
}

func (b *etcdBackend) Store() store.Store[*storetest.Value] {
	if b.served != nil {
		return b.served
	}
	return b.s
}
func (b *etcdBackend) Stop(*testing.T) { b.m.Stop() }

func (b *etcdBackend) Start(t *testing.T) {
	cfg := memberConfig("solo", b.dir)
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{b.client}, []url.URL{b.client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{b.peer}, []url.URL{b.peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	b.m = start(t, cfg)
	waitReady(t, b.m)
}

func (b *etcdBackend) Copy(t *testing.T) func(t *testing.T) {
	dst := b.newDir(t)
	copyDir(t, b.dir, dst)
	return func(t *testing.T) {
		b.dir = dst
		b.Start(t)
	}
}

func (b *etcdBackend) StartFresh(t *testing.T) {
	b.dir = b.newDir(t)
	b.Start(t)
}

// copyDir copies the directory tree at from to to, directories private
// (as etcd wants its data directory).
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatalf("copy %s: %v", from, err)
	}
	err := filepath.WalkDir(to, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chmod(path, 0o700)
	})
	if err != nil {
		t.Fatal(err)
	}
}
