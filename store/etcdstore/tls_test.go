package etcdstore_test

import (
	"context"
	"crypto/tls"
	"net/url"
	"testing"
	"time"

	"github.com/converge-go/converge/internal/testcerts"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/server/v3/embed"
)

// TestMutualTLSServesAndARefusedOrUntrustedClientIsUnavailable: the store
// works through a client whose TLS configuration is the caller's, against a
// member that serves TLS and requires client certificates; a client the
// server refuses, or that does not trust the server, gets
// store.ErrUnavailable.
func TestMutualTLSServesAndARefusedOrUntrustedClientIsUnavailable(t *testing.T) {
	certs, err := testcerts.Write(t.TempDir())
	require.NoError(t, err)
	pair, pool := certs.Client, certs.Roots
	e := startServer(t, func(cfg *embed.Config) {
		u := url.URL{Scheme: "https", Host: "127.0.0.1:0"}
		cfg.ListenClientUrls = []url.URL{u}
		cfg.AdvertiseClientUrls = []url.URL{u}
		cfg.ClientTLSInfo.CertFile = certs.ServerCert
		cfg.ClientTLSInfo.KeyFile = certs.ServerKey
		cfg.ClientTLSInfo.TrustedCAFile = certs.CA
		cfg.ClientTLSInfo.ClientCertAuth = true
	})
	ctx := t.Context()

	client := newClient(t, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, e.Endpoint())
	s := newStore(t, client, "secure/")
	start, err := s.Revision(ctx)
	require.NoError(t, err)
	w, err := s.Watch(ctx, "", start)
	require.NoError(t, err)
	defer w.Stop()
	obj, err := s.Create(ctx, "a", &item{N: 1, S: "over TLS"})
	require.NoError(t, err)
	got, err := s.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, obj, got)
	require.Equal(t, store.Event[*item]{Type: store.Created, Object: obj}, nextEvent(t, w))

	for name, cfg := range map[string]*tls.Config{
		"no client certificate": {RootCAs: pool, MinVersion: tls.VersionTLS12},
		"untrusted server":      {Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
	} {
		refused := newStore(t, newClient(t, cfg, e.Endpoint()), "secure/")
		short, cancel := context.WithTimeout(ctx, time.Second)
		_, err := refused.Get(short, "a")
		cancel()
		require.ErrorIs(t, err, store.ErrUnavailable, name)
	}
}
