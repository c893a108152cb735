package etcdstore_test

import (
	"crypto/tls"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/converge-go/converge/store/etcdstore/etcdembed"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// startupLimit bounds the wait for an embedded member to become ready; a
// safety net against hanging, not an assertion about speed.
const startupLimit = 30 * time.Second

// memberConfig returns the project's embedded member configuration
// (etcdembed.Config): fast raft timings, no fsync (the tests stop
// processes, they do not crash machines), silent logs, loopback ports.
func memberConfig(name, dir string) *embed.Config { return etcdembed.Config(name, dir) }

// member is an embedded etcd member.
type member struct {
	*embed.Etcd
	stop func()
}

// Stop closes the member; it is safe to call more than once.
func (m *member) Stop() { m.stop() }

// Endpoint returns the client URL the member listens on.
func (m *member) Endpoint() string {
	scheme := "http"
	if m.Config().ClientTLSInfo.CertFile != "" {
		scheme = "https"
	}
	return fmt.Sprintf("%s://%s", scheme, m.Clients[0].Addr())
}

// start starts a member with cfg, stopped at cleanup (after the clients
// registered later), without waiting for it to be ready.
func start(t testing.TB, cfg *embed.Config) *member {
	t.Helper()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("start etcd member %s: %v", cfg.Name, err)
	}
	m := &member{Etcd: e, stop: sync.OnceFunc(e.Close)}
	t.Cleanup(m.Stop)
	return m
}

// startServer starts a one-member embedded etcd, stopped at cleanup, after
// the clients registered later. configure, if not nil, adjusts the
// configuration first.
func startServer(t testing.TB, configure func(*embed.Config)) *member {
	t.Helper()
	cfg := memberConfig("solo", t.TempDir())
	if configure != nil {
		configure(cfg)
	}
	m := start(t, cfg)
	waitReady(t, m)
	return m
}

func waitReady(t testing.TB, e *member) {
	t.Helper()
	timer := time.NewTimer(startupLimit)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("etcd failed: %v", err)
	case <-timer.C:
		t.Fatalf("etcd not ready within %v", startupLimit)
	}
}

// newClient returns a client of endpoints, closed at cleanup (before the
// servers started earlier).
func newClient(t testing.TB, tlsConfig *tls.Config, endpoints ...string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		TLS:         tlsConfig,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
