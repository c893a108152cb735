package etcdstore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// identityOf returns s's identity, failing t on an error or an empty one.
func identityOf(t *testing.T, s store.Identifier) string {
	t.Helper()
	id, err := s.Identity(t.Context())
	require.NoError(t, err)
	require.NotEmpty(t, id)
	return id
}

// clusterID returns the ID of the cluster client talks to.
func clusterID(t *testing.T, client *clientv3.Client) uint64 {
	t.Helper()
	resp, err := client.Get(t.Context(), "any", clientv3.WithCountOnly())
	require.NoError(t, err)
	return resp.Header.ClusterId
}

// The identity is the same from every call, every client of the prefix
// and after the member restarts; clients racing to make it on a fresh
// prefix all get one identity.
func TestIdentityIsStableAcrossCallsClientsAndAMemberRestart(t *testing.T) {
	r := startRestartable(t)
	c1, c2 := newClient(t, nil, r.Endpoint()), newClient(t, nil, r.Endpoint())
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		client := []*clientv3.Client{c1, c2}[i%2]
		wg.Go(func() {
			id, err := newStore(t, client, "app/").Identity(t.Context())
			if err == nil {
				ids[i] = id
			}
		})
	}
	wg.Wait()
	id := identityOf(t, newStore(t, c1, "app/"))
	for i, got := range ids {
		require.Equal(t, id, got, "racing client %d", i)
	}
	r.Stop()
	r.Start()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), patience/10)
		defer cancel()
		got, err := newStore(t, c2, "app/").Identity(ctx)
		return err == nil && got == id
	}, patience, patience/100, "the identity after the member restarted")
}

// Another prefix of the cluster is another store, and so is a cluster
// whose data was wiped and which was started again with the same flags,
// although etcd gives it the same cluster ID.
func TestAWipedClusterAndAnotherPrefixAreOtherStores(t *testing.T) {
	r := startRestartable(t)
	client := newClient(t, nil, r.Endpoint())
	id := identityOf(t, newStore(t, client, "app/"))
	require.NotEqual(t, id, identityOf(t, newStore(t, client, "other/")), "another prefix")
	before := clusterID(t, client)

	r.Stop()
	r.dir = t.TempDir() // the data is gone; the configuration is the same
	r.Start()
	var after string
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), patience/10)
		defer cancel()
		var err error
		after, err = newStore(t, client, "app/").Identity(ctx)
		return err == nil
	}, patience, patience/100, "the wiped cluster serves")
	require.Equal(t, before, clusterID(t, client), "etcd derives the cluster ID from the configuration")
	require.NotEqual(t, id, after, "a wiped cluster is another store")
}

// A cluster holding the identity record of another one (as a cluster
// restored from its snapshot does) under another cluster ID (its own
// --initial-cluster-token) is another store.
func TestTheRecordOfAnotherClusterIsAnotherStore(t *testing.T) {
	ctx := t.Context()
	a := newClient(t, nil, startServer(t, nil).Endpoint())
	b := newClient(t, nil, startServer(t, func(cfg *embed.Config) { cfg.InitialClusterToken = "restored" }).Endpoint())
	require.NotEqual(t, clusterID(t, a), clusterID(t, b))
	id := identityOf(t, newStore(t, a, "app/"))
	record, err := a.Get(ctx, "app/")
	require.NoError(t, err)
	_, err = b.Put(ctx, "app/", string(record.Kvs[0].Value))
	require.NoError(t, err)
	require.NotEqual(t, id, identityOf(t, newStore(t, b, "app/")))
}

// The identity record is no key of the Store: List and Watch leave it out,
// and keys, revisions and guards work as before.
func TestTheIdentityRecordIsNotAKeyOfTheStore(t *testing.T) {
	ctx := t.Context()
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	s := newStore(t, client, "app/")
	start, err := s.Revision(ctx)
	require.NoError(t, err)
	w, err := s.Watch(ctx, "", start)
	require.NoError(t, err)
	defer w.Stop()
	identityOf(t, s)
	a, err := s.Create(ctx, "a", &item{N: 1})
	require.NoError(t, err)
	require.Equal(t, store.Event[*item]{Type: store.Created, Object: a}, nextEvent(t, w), "the record's creation is not delivered")
	objs, _, err := s.List(ctx, "")
	require.NoError(t, err)
	require.Equal(t, []store.Object[*item]{a}, objs)
}

// A record at the prefix key that this package did not write is refused
// with store.ErrInvalid, never taken for an identity.
func TestAForeignIdentityRecordIsInvalid(t *testing.T) {
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	_, err := client.Put(t.Context(), "app/", "written by someone else")
	require.NoError(t, err)
	_, err = newStore(t, client, "app/").Identity(t.Context())
	require.ErrorIs(t, err, store.ErrInvalid)
}
