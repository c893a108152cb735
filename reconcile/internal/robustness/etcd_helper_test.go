package robustness_test

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/converge-go/converge/store/etcdstore/etcdembed"
	"github.com/converge-go/converge/store/etcdstore/etcdprocs"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// etcdPatience bounds the waits on embedded members (start-up, an
// election): a safety net against hanging, not an assertion about speed.
const etcdPatience = 30 * time.Second

// etcdMember is an embedded etcd member.
type etcdMember struct {
	*embed.Etcd
	stop func()
}

// Stop closes the member; it is safe to call more than once and waits for
// the first call to finish.
func (m *etcdMember) Stop() { m.stop() }

// Endpoint returns the client URL the member listens on.
func (m *etcdMember) Endpoint() string {
	return "http://" + m.Clients[0].Addr().String()
}

// Crash stops the member's server the way a crash would, without handing
// its leadership over first, then closes its listeners in the background
// (that waits for its clients to hang up, up to etcd's request timeout);
// the member's cleanup waits for the close to finish.
func (m *etcdMember) Crash() {
	m.Server.HardStop()
	go m.Stop()
}

// Leads reports whether the member is running and is its cluster's leader.
func (m *etcdMember) Leads() bool {
	select {
	case <-m.Server.StopNotify():
		return false
	default:
	}
	return m.Server.Leader() == m.Server.MemberID()
}

// etcdMemberConfig returns the configuration of an embedded member named
// name in dir: fast raft timings (TickMs 10, ElectionMs 100), no fsync (the
// tests stop processes, they do not crash machines), silent logs, client
// URL on an ephemeral loopback port and peer URL peer.
func etcdMemberConfig(name, dir string, peer url.URL) *embed.Config {
	cfg := etcdembed.Config(name, dir)
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	return cfg
}

// startMember starts a member with cfg, stopped at t's cleanup (after the
// clients registered later), without waiting for it to be ready.
func startMember(t testing.TB, cfg *embed.Config) (*etcdMember, error) {
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start etcd member %s: %w", cfg.Name, err)
	}
	m := &etcdMember{Etcd: e, stop: sync.OnceFunc(e.Close)}
	t.Cleanup(m.Stop)
	return m, nil
}

// waitReady waits until the member has joined its cluster and can serve.
func waitReady(m *etcdMember) error {
	timer := time.NewTimer(etcdPatience)
	defer timer.Stop()
	select {
	case <-m.Server.ReadyNotify():
		return nil
	case err := <-m.Err():
		return fmt.Errorf("etcd member %s failed: %w", m.Config().Name, err)
	case <-timer.C:
		return fmt.Errorf("etcd member %s not ready within %v", m.Config().Name, etcdPatience)
	}
}

// startEtcdCluster starts n members on loopback, each in its own temporary
// directory, and waits until all are ready (which implies a leader). A
// single member listens for peers on port 0; a cluster's peer URLs must be
// known before its members start, so they take loopback ports that were
// free a moment ago and lie outside the kernel's ephemeral range
// (etcdprocs.FreeAddrs).
func startEtcdCluster(t testing.TB, n int) ([]*etcdMember, error) {
	hosts := []string{"127.0.0.1:0"}
	if n > 1 {
		var err error
		if hosts, err = etcdprocs.FreeAddrs(n); err != nil {
			return nil, err
		}
	}
	peers := make([]url.URL, n)
	var initial []string
	for i := range peers {
		peers[i] = url.URL{Scheme: "http", Host: hosts[i]}
		initial = append(initial, fmt.Sprintf("m%d=%s", i, peers[i].String()))
	}
	members := make([]*etcdMember, n)
	for i := range members {
		cfg := etcdMemberConfig(fmt.Sprintf("m%d", i), t.TempDir(), peers[i])
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = fmt.Sprintf("robustness-%d", n)
		m, err := startMember(t, cfg)
		if err != nil {
			return nil, err
		}
		members[i] = m
	}
	for _, m := range members {
		if err := waitReady(m); err != nil {
			return nil, err
		}
	}
	return members, nil
}

// newEtcdClient returns a client of the members' endpoints, closed at t's
// cleanup (before the members started earlier).
func newEtcdClient(t testing.TB, members []*etcdMember) (*clientv3.Client, error) {
	var endpoints []string
	for _, m := range members {
		endpoints = append(endpoints, m.Endpoint())
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, nil
}
