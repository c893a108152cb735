// Package testcerts makes the certificates of converge's TLS tests: a CA,
// a server certificate for 127.0.0.1 and a client certificate it signed,
// valid for an hour, both in memory (for a tls.Config) and in PEM files
// (for the flags of a command or the configuration of an etcd member).
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Certs are what Write makes.
type Certs struct {
	// CA is the CA's certificate; ServerCert/ServerKey a server
	// certificate for 127.0.0.1 it signed, ClientCert/ClientKey a client
	// certificate it signed: the paths of PEM files.
	CA, ServerCert, ServerKey, ClientCert, ClientKey string

	// Roots holds the CA's certificate: a client's RootCAs, or a server's
	// ClientCAs.
	Roots *x509.CertPool
	// Server and Client are the two certificates with their keys, for a
	// tls.Config's Certificates.
	Server, Client tls.Certificate
}

// Write makes a CA, a server and a client certificate valid for an hour
// and writes them to dir.
func Write(dir string) (Certs, error) {
	c := Certs{
		CA:         filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem"),
		Roots: x509.NewCertPool(),
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return c, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "converge test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return c, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return c, err
	}
	c.Roots.AddCert(ca)
	if err := writePEM(c.CA, "CERTIFICATE", caDER); err != nil {
		return c, err
	}
	if c.Server, err = leaf(ca, caKey, 2, c.ServerCert, c.ServerKey, x509.ExtKeyUsageServerAuth); err != nil {
		return c, err
	}
	c.Client, err = leaf(ca, caKey, 3, c.ClientCert, c.ClientKey, x509.ExtKeyUsageClientAuth)
	return c, err
}

// leaf makes a certificate for 127.0.0.1 that ca signed, for usage, and
// writes it and its key to the PEM files cert and key.
func leaf(ca *x509.Certificate, caKey *ecdsa.PrivateKey, serial int64, cert, key string, usage x509.ExtKeyUsage) (tls.Certificate, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "converge test " + filepath.Base(cert)},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := writePEM(cert, "CERTIFICATE", der); err != nil {
		return tls.Certificate{}, err
	}
	if err := writePEM(key, "EC PRIVATE KEY", keyDER); err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}, nil
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}
