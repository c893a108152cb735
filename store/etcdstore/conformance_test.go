package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/converge-go/converge/store/storetest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestConformance runs the store suite with one embedded member for the
// whole run and a fresh prefix per sub-test: the keys and revisions that
// earlier sub-tests left under other prefixes must not show, and this
// store's revisions start wherever the cluster's counter is. Keys that
// share a revision are written as another program would: one etcd
// transaction of several puts.
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
	storetest.RunWith(t, newStore, storetest.Options{
		SlowWatcherWrites: 300,
		CreateShared: func(ctx context.Context, s store.Store[*storetest.Value], values map[string]*storetest.Value) (int64, error) {
			return createShared(ctx, client, s.(*etcdstore.Store[*storetest.Value]).Prefix(), values)
		},
	})
}

// createShared creates every key of values under prefix in one etcd
// transaction, encoded as the store's default codec does, and returns its
// revision, which every key shares.
func createShared[T any](ctx context.Context, client *clientv3.Client, prefix string, values map[string]T) (int64, error) {
	var cmps []clientv3.Cmp
	var puts []clientv3.Op
	for k, v := range values {
		b, err := store.JSON[T]{}.Marshal(v)
		if err != nil {
			return 0, err
		}
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(prefix+k), "=", 0))
		puts = append(puts, clientv3.OpPut(prefix+k, string(b)))
	}
	resp, err := client.Txn(ctx).If(cmps...).Then(puts...).Commit()
	if err != nil {
		return 0, err
	}
	if !resp.Succeeded {
		return 0, errors.New("a key already exists")
	}
	return resp.Header.Revision, nil
}
