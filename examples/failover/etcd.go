package main

import (
	"fmt"
	"net/url"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// etcdStartLimit bounds the wait for the embedded member to become ready.
const etcdStartLimit = 30 * time.Second

// startEtcd starts a single-member etcd with its data in dir: fast raft
// timings, loopback listeners on ports the system picks, no fsync (the demo
// crashes processes, not machines) and no logs. It returns once the member
// serves clients; the caller closes it after its last client.
func startEtcd(dir string) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "failover"
	cfg.Dir = dir
	cfg.TickMs = 10
	cfg.ElectionMs = 100
	cfg.UnsafeNoFsync = true
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	client := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	peer := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	timer := time.NewTimer(etcdStartLimit)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcd failed: %w", err)
	case <-timer.C:
		e.Close()
		return nil, fmt.Errorf("etcd not ready within %v", etcdStartLimit)
	}
}

// etcdEndpoint is the client URL the member listens on.
func etcdEndpoint(e *embed.Etcd) string {
	return "http://" + e.Clients[0].Addr().String()
}

// newClient returns a silent etcd client of endpoint.
func newClient(endpoint string) (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	return c, nil
}
