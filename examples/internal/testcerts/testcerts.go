// Package testcerts makes the certificates of the examples' TLS tests: a
// CA, a server certificate for 127.0.0.1 and a client certificate it
// signed, written to PEM files (crypto/x509).
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Certs are the PEM files Write makes.
type Certs struct {
	// CA is the CA's certificate; ServerCert/ServerKey a server
	// certificate for 127.0.0.1 it signed, ClientCert/ClientKey a client
	// certificate it signed.
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// Write makes a CA, a server and a client certificate valid for an hour
// and writes them to dir.
func Write(dir string) (Certs, error) {
	c := Certs{
		CA:         filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem"),
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return c, err
	}
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "converge test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return c, err
	}
	if err := writePEM(c.CA, "CERTIFICATE", caDER); err != nil {
		return c, err
	}
	for i, leaf := range []struct {
		cert, key string
		usage     x509.ExtKeyUsage
	}{{c.ServerCert, c.ServerKey, x509.ExtKeyUsageServerAuth}, {c.ClientCert, c.ClientKey, x509.ExtKeyUsageClientAuth}} {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return c, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: "converge test " + filepath.Base(leaf.cert)},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{leaf.usage},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return c, err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return c, err
		}
		if err := writePEM(leaf.cert, "CERTIFICATE", der); err != nil {
			return c, err
		}
		if err := writePEM(leaf.key, "EC PRIVATE KEY", keyDER); err != nil {
			return c, err
		}
	}
	return c, nil
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}
