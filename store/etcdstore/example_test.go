package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/url"
	"os"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Config is the value type of the examples.
type Config struct {
	Replicas int    `json:"replicas"`
	Image    string `json:"image"`
}

// exampleServer starts a one-member embedded etcd in a temporary directory
// and returns its client URL and a function that stops it and removes the
// directory. A real program connects to its cluster instead.
func exampleServer() (endpoint string, stop func()) {
	dir, err := os.MkdirTemp("", "etcdstore-example")
	if err != nil {
		log.Fatal(err)
	}
	cfg := memberConfig("example", dir)
	peer := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatal(err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(startupLimit):
		log.Fatal("etcd did not start")
	}
	return "http://" + e.Clients[0].Addr().String(), func() {
		e.Close()
		os.RemoveAll(dir)
	}
}

// Connect a client (its endpoints, TLS and credentials are yours to
// configure), make a Store under a prefix, and write with compare-and-swap.
func Example() {
	endpoint, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	client, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	s, err := etcdstore.New[*Config](client, "myapp/")
	if err != nil {
		log.Fatal(err)
	}
	web, err := s.Create(ctx, "apps/web", &Config{Replicas: 2, Image: "web:1"})
	if err != nil {
		log.Fatal(err)
	}
	// The update names the revision it read...
	if _, err := s.Update(ctx, "apps/web", &Config{Replicas: 3, Image: "web:2"}, web.Revision); err != nil {
		log.Fatal(err)
	}
	// ...so a second writer that read the same revision loses, visibly.
	_, err = s.Update(ctx, "apps/web", &Config{Replicas: 1, Image: "web:1"}, web.Revision)
	fmt.Println("stale update:", errors.Is(err, store.ErrConflict))

	objs, rev, err := s.List(ctx, "apps/")
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range objs {
		fmt.Printf("%s: %d replicas of %s, revision %d of %d\n", o.Key, o.Value.Replicas, o.Value.Image, o.Revision, rev)
	}
	// The keys live under the prefix in etcd.
	raw, err := client.Get(ctx, "myapp/apps/web", clientv3.WithKeysOnly())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("etcd key:", string(raw.Kvs[0].Key))
	// Output:
	// stale update: true
	// apps/web: 3 replicas of web:2, revision 3 of 3
	// etcd key: myapp/apps/web
}
