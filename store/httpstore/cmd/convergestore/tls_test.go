package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
)

// pki is a test CA, a server certificate for 127.0.0.1 and a client
// certificate, all signed by the CA, with the server's files in PEM.
type pki struct {
	roots                     *x509.CertPool
	client                    tls.Certificate
	caFile, certFile, keyFile string
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true,
	}
	caDER := sign(t, caTmpl, caTmpl, caKey, caKey)
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	p := pki{roots: x509.NewCertPool(), caFile: filepath.Join(dir, "ca.pem"), certFile: filepath.Join(dir, "server.pem"), keyFile: filepath.Join(dir, "server.key")}
	p.roots.AddCert(ca)
	writePEM(t, p.caFile, "CERTIFICATE", caDER)

	serverKey := newKey(t)
	serverDER := sign(t, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "convergestore"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}, ca, serverKey, caKey)
	writePEM(t, p.certFile, "CERTIFICATE", serverDER)
	keyDER, err := x509.MarshalECPrivateKey(serverKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, p.keyFile, "EC PRIVATE KEY", keyDER)

	clientKey := newKey(t)
	clientDER := sign(t, &x509.Certificate{
		SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "operator"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, clientKey, caKey)
	p.client = tls.Certificate{Certificate: [][]byte{clientDER}, PrivateKey: clientKey}
	return p
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func sign(t *testing.T, tmpl, parent *x509.Certificate, key, by *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, by)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestOverTLSWithClientCertificatesOnlyClientsWithACertificateAreServed(t *testing.T) {
	p := newPKI(t)
	s := start(t, t.TempDir(), "-tls-cert", p.certFile, "-tls-key", p.keyFile, "-client-ca", p.caFile)
	if !strings.HasPrefix(s.url, "https://127.0.0.1:") {
		t.Fatalf("the URL announced over TLS: %s", s.url)
	}
	tok := s.token(t)
	good := client[raw](t, s.url, tok, httpstore.WithTLSConfig(&tls.Config{RootCAs: p.roots, Certificates: []tls.Certificate{p.client}}))
	obj, err := good.Create(t.Context(), "a", raw(`{"spec":1}`))
	if err != nil {
		t.Fatalf("a client with a certificate: %v", err)
	}
	noCert := client[raw](t, s.url, tok, httpstore.WithTLSConfig(&tls.Config{RootCAs: p.roots}))
	if _, err := noCert.Create(t.Context(), "b", raw(`{"spec":1}`)); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("a client without a certificate: %v; want no answer (ErrUnavailable)", err)
	}
	if rev, err := good.Revision(t.Context()); err != nil || rev != obj.Revision {
		t.Errorf("revision %d (%v); want %d: only the client with a certificate wrote", rev, err, obj.Revision)
	}
}

func TestAHostNameIsServedOnlyWhenAllowed(t *testing.T) {
	s := start(t, t.TempDir(), "-allow-host", "store.example")
	tok := s.token(t)
	for host, want := range map[string]int{"store.example": http.StatusOK, "rebound.example": http.StatusForbidden} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.url+"/v1/revision", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %s; want %d", host, resp.Status, want)
		}
	}
	http.DefaultClient.CloseIdleConnections()
}
