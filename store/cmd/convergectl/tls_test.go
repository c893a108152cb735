package main

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/converge-go/converge/internal/testcerts"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/stretchr/testify/require"
)

// TestTLSFlagsVerifyTheServerAndPresentAClientCertificate: over https,
// -cacert makes the server's certificate trusted (without it the command
// fails), and -cert/-key present a client certificate to a server that
// requires one.
func TestTLSFlagsVerifyTheServerAndPresentAClientCertificate(t *testing.T) {
	m := store.NewMemory[value]()
	t.Cleanup(func() { _ = m.Close() })
	h, err := httpstore.NewHandler[value](m)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "no client certificate", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	}))
	certs, err := testcerts.Write(t.TempDir())
	require.NoError(t, err)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{certs.Server}, ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca, cert, key := certs.CA, certs.ClientCert, certs.ClientKey

	r := ctl(t, srv.URL, `{"v":1}`, "put", "k")
	require.Equal(t, exitError, r.code, "an unverified server was trusted")
	r = ctl(t, srv.URL, `{"v":1}`, "-cacert", ca, "put", "k")
	require.Equal(t, exitRefused, r.code, "no client certificate, yet served: %s", r.stdout) // the server's 403
	r = ctl(t, srv.URL, `{"v":1}`, "-cacert", ca, "-cert", cert, "-key", key, "put", "k")
	require.Equal(t, 0, r.code, r.stderr)
	_, err = m.Get(context.Background(), "k")
	require.NoError(t, err)
	r = ctl(t, srv.URL, "", "-cacert", ca, "-cert", cert, "get", "k")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "-cert and -key go together")
}

// tlsFiles are the PEM files a client of serveMutualTLS needs: the
// server's CA (-cacert) and a certificate the server accepts from
// clients, with its key (-cert, -key).
type tlsFiles struct{ ca, cert, key string }

// serveMutualTLS serves a memory store over https, on loopback, to clients
// that present a certificate the server verifies
// (tls.RequireAndVerifyClientCert), at TLS versions up to maxVersion.
func serveMutualTLS(t *testing.T, maxVersion uint16) (*store.Memory[value], string, tlsFiles) {
	t.Helper()
	m := store.NewMemory[value]()
	t.Cleanup(func() { _ = m.Close() })
	h, err := httpstore.NewHandler[value](m)
	require.NoError(t, err)
	certs, err := testcerts.Write(t.TempDir())
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{certs.Server},
		ClientAuth:   tls.RequireAndVerifyClientCert, ClientCAs: certs.Roots,
		MinVersion: tls.VersionTLS12, MaxVersion: maxVersion,
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return m, srv.URL, tlsFiles{ca: certs.CA, cert: certs.ClientCert, key: certs.ClientKey}
}

// TestAMissingClientCertificateIsNamedAsSuchNotAsAReset: a server that
// requires a client certificate ends the connection of a client without
// one (a TLS alert, or a reset that loses it); convergectl says that a
// certificate is required and how to give one, over TLS 1.2 and 1.3, and
// with -cert and -key the same command succeeds.
func TestAMissingClientCertificateIsNamedAsSuchNotAsAReset(t *testing.T) {
	for name, version := range map[string]uint16{"TLS 1.2": tls.VersionTLS12, "TLS 1.3": tls.VersionTLS13} {
		t.Run(name, func(t *testing.T) {
			m, url, files := serveMutualTLS(t, version)
			for _, args := range [][]string{{"put", "k"}, {"get", "k"}, {"watch"}} {
				r := ctl(t, url, `{"v":1}`, append([]string{"-cacert", files.ca}, args...)...)
				require.Equal(t, exitError, r.code, "%v: %s", args, r.stderr)
				require.Contains(t, r.stderr, "convergectl: the server requires a client certificate: give -cert and -key", args)
			}
			r := ctl(t, url, `{"v":1}`, "-cacert", files.ca, "-cert", files.cert, "-key", files.key, "put", "k")
			require.Equal(t, 0, r.code, r.stderr)
			_, err := m.Get(context.Background(), "k")
			require.NoError(t, err)
		})
	}
}

// TestAnUnverifiedServerIsNotTakenForAMissingClientCertificate: a server
// whose certificate convergectl cannot verify fails the handshake before
// any certificate request; the error is not blamed on -cert.
func TestAnUnverifiedServerIsNotTakenForAMissingClientCertificate(t *testing.T) {
	_, url, _ := serveMutualTLS(t, tls.VersionTLS13)
	r := ctl(t, url, `{"v":1}`, "put", "k")
	require.Equal(t, exitError, r.code)
	require.Contains(t, r.stderr, "certificate")
	require.NotContains(t, r.stderr, "client certificate")
}
