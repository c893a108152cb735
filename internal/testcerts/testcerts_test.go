package testcerts_test

import (
	"crypto/tls"
	"net"
	"os"
	"testing"

	"github.com/converge-go/converge/internal/testcerts"
)

// TestTheCertificatesMakeAMutualTLSHandshakeFromMemoryAndFromTheFiles: a
// server with the server certificate requiring a client certificate the CA
// signed and a client of 127.0.0.1 trusting the CA complete a handshake,
// once with the certificates in memory and once loaded from the files.
func TestTheCertificatesMakeAMutualTLSHandshakeFromMemoryAndFromTheFiles(t *testing.T) {
	c, err := testcerts.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fromFiles := func(cert, key string) tls.Certificate {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		return pair
	}
	ca, err := os.ReadFile(c.CA)
	if err != nil || !c.Roots.AppendCertsFromPEM(ca) {
		t.Fatalf("the CA file: %v", err)
	}
	for name, pair := range map[string][2]tls.Certificate{
		"memory": {c.Server, c.Client},
		"files":  {fromFiles(c.ServerCert, c.ServerKey), fromFiles(c.ClientCert, c.ClientKey)},
	} {
		a, b := net.Pipe()
		srv := tls.Server(a, &tls.Config{Certificates: pair[:1], ClientCAs: c.Roots, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
		cl := tls.Client(b, &tls.Config{ServerName: "127.0.0.1", RootCAs: c.Roots, Certificates: pair[1:], MinVersion: tls.VersionTLS12})
		done := make(chan error, 1)
		go func() { done <- srv.HandshakeContext(t.Context()) }()
		if err := cl.HandshakeContext(t.Context()); err != nil {
			t.Errorf("%s: the client's handshake: %v", name, err)
		}
		if err := <-done; err != nil {
			t.Errorf("%s: the server's handshake: %v", name, err)
		}
		_ = a.Close() // not srv and cl: their close_notify would wait for a reader
		_ = b.Close()
	}
}
