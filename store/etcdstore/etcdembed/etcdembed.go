// Package etcdembed runs etcd inside the process, for examples and tests:
// the project's one configuration of an embedded member (fast raft
// timings, no fsync, no logs, loopback listeners on ports the system
// picks), a start that waits until the member serves, and silent clients.
// The examples, the etcdstore tests and reconcile/internal/robustness use it; tests
// that need separate etcd processes use etcdprocs.
//
// No fsync means a machine crash can lose acknowledged writes: fine for
// examples and tests that kill processes, never for production.
package etcdembed

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

// Config returns the configuration of a one-member cluster named name
// with its data in dir: raft ticks of 10 ms and an election timeout of
// 100 ms, no fsync, no logs, client and peer URLs on loopback ports the
// system picks. A caller building a cluster sets the peer URLs and
// InitialCluster itself; one building TLS sets the client URLs' scheme and
// ClientTLSInfo.
func Config(name, dir string) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = name
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
	return cfg
}

// Start starts a single-member etcd (Config) with its data in dir and
// returns once it serves clients; the caller closes it after its last
// client.
func Start(dir string) (*embed.Etcd, error) {
	e, err := embed.StartEtcd(Config("converge", dir))
	if err != nil {
		return nil, fmt.Errorf("etcdembed: start: %w", err)
	}
	if err := WaitReady(e, startLimit); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// WaitReady waits up to patience for e to join its cluster and serve.
func WaitReady(e *embed.Etcd, patience time.Duration) error {
	timer := time.NewTimer(patience)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
		return nil
	case err := <-e.Err():
		return fmt.Errorf("etcdembed: member %s failed: %w", e.Config().Name, err)
	case <-timer.C:
		return fmt.Errorf("etcdembed: member %s not ready within %v", e.Config().Name, patience)
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
		return nil, fmt.Errorf("etcdembed: client: %w", err)
	}
	return c, nil
}
