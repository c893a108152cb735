// Package etcdtest serves the examples' tests of etcdflag: an embedded
// etcd member, and an etcd server process, that serve TLS and require
// client certificates (made by internal/testcerts of the root module).
package etcdtest

import (
	"fmt"
	"net/url"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/converge-go/converge/internal/testcerts"
	"github.com/converge-go/converge/store/etcdstore/etcdembed"
)

// StartTLS starts an embedded member with its data in dir that serves
// clients over TLS with c's server certificate and accepts only clients
// with a certificate c's CA signed. It returns the member and its https
// client URL; the caller closes the member.
func StartTLS(dir string, c testcerts.Certs) (*embed.Etcd, string, error) {
	cfg := etcdembed.Config("tls", dir)
	u := url.URL{Scheme: "https", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{u}, []url.URL{u}
	cfg.ClientTLSInfo.CertFile, cfg.ClientTLSInfo.KeyFile = c.ServerCert, c.ServerKey
	cfg.ClientTLSInfo.TrustedCAFile = c.CA
	cfg.ClientTLSInfo.ClientCertAuth = true
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("etcdtest: start: %w", err)
	}
	if err := etcdembed.WaitReady(e, 30*time.Second); err != nil {
		e.Close()
		return nil, "", err
	}
	return e, "https://" + e.Clients[0].Addr().String(), nil
}
