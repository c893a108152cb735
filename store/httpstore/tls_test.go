package httpstore_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net/http/httptest"
	"testing"

	"github.com/converge-go/converge/internal/testcerts"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/stretchr/testify/require"
)

// TestTLSServerRequiringClientCertificatesServesOnlyCertifiedClients: over
// TLS with client certificates required, a client with a certificate
// signed by the server's CA reads, writes and watches; one without is
// refused during the handshake and writes nothing.
func TestTLSServerRequiringClientCertificatesServesOnlyCertifiedClients(t *testing.T) {
	m := store.NewMemory[*item]()
	t.Cleanup(func() { _ = m.Close() })
	h, err := httpstore.NewHandler[*item](m, httpstore.WithReadWriteToken(rwToken))
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(h)
	httpstore.ApplyServerDefaults(srv.Config)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	certs, err := testcerts.Write(t.TempDir())
	require.NoError(t, err)
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: certs.Roots, MinVersion: tls.VersionTLS12}
	srv.EnableHTTP2 = true // watches stream over HTTP/2 as over HTTP/1.1
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())

	good := client[*item](t, srv.URL, httpstore.WithToken(rwToken),
		httpstore.WithTLSConfig(&tls.Config{RootCAs: roots, Certificates: []tls.Certificate{certs.Client}}))
	w, err := good.Watch(t.Context(), "", 0)
	require.NoError(t, err)
	defer w.Stop()
	obj, err := good.Create(t.Context(), "a", &item{N: 1})
	require.NoError(t, err)
	ev := <-w.Events()
	require.Equal(t, store.Event[*item]{Type: store.Created, Object: obj}, ev)
	require.NoError(t, w.(store.ProgressRequester).RequestProgress(t.Context()))
	ev = <-w.Events()
	require.Equal(t, store.Progress, ev.Type)
	require.GreaterOrEqual(t, ev.Object.Revision, obj.Revision)

	noCert := client[*item](t, srv.URL, httpstore.WithToken(rwToken), httpstore.WithTLSConfig(&tls.Config{RootCAs: roots}))
	_, err = noCert.Create(t.Context(), "b", &item{N: 2})
	require.ErrorIs(t, err, store.ErrUnavailable, "a client without a certificate gets no answer")
	_, err = noCert.Get(t.Context(), "a")
	require.ErrorIs(t, err, store.ErrUnavailable)

	plain := client[*item](t, srv.URL, httpstore.WithToken(rwToken))
	_, err = plain.Create(t.Context(), "b", &item{N: 2})
	require.ErrorIs(t, err, store.ErrUnavailable, "a client that does not trust the server's certificate sends nothing")

	rev, err := m.Revision(t.Context())
	require.NoError(t, err)
	require.Equal(t, obj.Revision, rev, "only the certified client wrote")
}
