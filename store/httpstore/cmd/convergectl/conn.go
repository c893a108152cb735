package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/converge-go/converge/store/httpstore"
)

// connFlags say how to reach the server.
type connFlags struct {
	server, token, tokenFile  string
	caFile, certFile, keyFile string
	timeout                   time.Duration
}

func (f *connFlags) register(fs *flag.FlagSet) {
	server := os.Getenv("CONVERGE_SERVER")
	if server == "" {
		server = "http://127.0.0.1:7007/store"
	}
	fs.StringVar(&f.server, "server", server, "the store's URL, with the path it is served at ($CONVERGE_SERVER)")
	fs.StringVar(&f.token, "token", os.Getenv("CONVERGE_TOKEN"), "bearer token ($CONVERGE_TOKEN)")
	fs.StringVar(&f.tokenFile, "token-file", "", "read the bearer token from this file")
	fs.StringVar(&f.caFile, "cacert", "", "PEM file of the certificates that verify an https server (default: the system's)")
	fs.StringVar(&f.certFile, "cert", "", "PEM file of a client certificate (with -key)")
	fs.StringVar(&f.keyFile, "key", "", "PEM file of the client certificate's key (with -cert)")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "bound on each request (not on watch)")
}

// client returns a client of the server the flags name.
func (f *connFlags) client() (*httpstore.Client[value], error) {
	var opts []httpstore.ClientOption
	tok := f.token
	if f.tokenFile != "" {
		b, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return nil, err
		}
		tok = strings.TrimSpace(string(b))
	}
	if tok != "" {
		opts = append(opts, httpstore.WithToken(tok))
	}
	if f.caFile != "" || f.certFile != "" || f.keyFile != "" {
		cfg, err := f.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, httpstore.WithTLSConfig(cfg))
	}
	return httpstore.New[value](f.server, opts...)
}

func (f *connFlags) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.caFile != "" {
		pem, err := os.ReadFile(f.caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-cacert %s: no PEM certificate in it", f.caFile)
		}
	}
	if (f.certFile == "") != (f.keyFile == "") {
		return nil, errors.New("-cert and -key go together")
	}
	if f.certFile != "" {
		cert, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
