// Package embedetcd is the examples' one embedded etcd: a single member
// in process, on loopback ports the system picks, with fast raft timings,
// no fsync and no logs, and silent clients for it. The examples that need
// etcd (failover) start it with Start and connect with NewClient.
package embedetcd

import (
	"fmt"
	"net/url"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// startLimit bounds the wait for the member to become ready.
const startLimit = 30 * time.Second

// Start starts a single-member etcd with its data in dir: fast raft
// timings, loopback listeners on ports the system picks, no fsync (examples
// crashes processes, not machines) and no logs. It returns once the member
// serves clients; the caller closes it after its last client.
func Start(dir string) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "converge-example"
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
		return nil, fmt.Errorf("embedetcd: start: %w", err)
	}
	timer := time.NewTimer(startLimit)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedetcd: member failed: %w", err)
	case <-timer.C:
		e.Close()
		return nil, fmt.Errorf("embedetcd: member not ready within %v", startLimit)
	}
}

// Endpoint is the client URL the member e listens on.
func Endpoint(e *embed.Etcd) string {
	return "http://" + e.Clients[0].Addr().String()
}

// NewClient returns a silent etcd client of endpoint; the caller closes
// it before the member.
func NewClient(endpoint string) (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("embedetcd: client: %w", err)
	}
	return c, nil
}
