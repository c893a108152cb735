package etcdstore_test

import (
	"fmt"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/converge-go/converge/store/storetest"
)

// TestConformance runs the store suite with one embedded member for the
// whole run and a fresh prefix per sub-test: the keys and revisions that
// earlier sub-tests left under other prefixes must not show, and this
// store's revisions start wherever the cluster's counter is.
func TestConformance(t *testing.T) {
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	n := 0
	newStore := func(t *testing.T) store.Store[*storetest.Value] {
		n++
		s, err := etcdstore.New[*storetest.Value](client, fmt.Sprintf("conformance/%d/", n))
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		return s
	}
	// etcd's client buffers a slow watcher's events: the watcher receives
	// them all, so a few hundred writes exercise the path.
	storetest.RunWith(t, newStore, storetest.Options{SlowWatcherWrites: 300})
}
