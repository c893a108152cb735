package etcdstore_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/server/v3/embed"
)

// selfSigned makes a self-signed ECDSA certificate for 127.0.0.1, usable by
// the server and by clients and trusted as its own CA, writes it and its key
// to dir, and returns their paths and the parsed certificate pair.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pair tls.Certificate, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "converge test"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, certPEM, 0o600))
	require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))
	pair, err = tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(certPEM))
	return certFile, keyFile, pair, pool
}

// TestMutualTLSServesAndARefusedOrUntrustedClientIsUnavailable: the store
// works through a client whose TLS configuration is the caller's, against a
// member that serves TLS and requires client certificates; a client the
// server refuses, or that does not trust the server, gets
// store.ErrUnavailable.
func TestMutualTLSServesAndARefusedOrUntrustedClientIsUnavailable(t *testing.T) {
	certFile, keyFile, pair, pool := selfSigned(t, t.TempDir())
	e := startServer(t, func(cfg *embed.Config) {
		u := url.URL{Scheme: "https", Host: "127.0.0.1:0"}
		cfg.ListenClientUrls = []url.URL{u}
		cfg.AdvertiseClientUrls = []url.URL{u}
		cfg.ClientTLSInfo.CertFile = certFile
		cfg.ClientTLSInfo.KeyFile = keyFile
		cfg.ClientTLSInfo.TrustedCAFile = certFile
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
