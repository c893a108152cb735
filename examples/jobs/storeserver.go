package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
)

// This file holds the daemon's way to a store served elsewhere
// (DaemonConfig.StoreServer): an httpstore client of a store served with
// the API-server layer, which then applies the layer's rules (finalizers,
// the generation, the status) server-side, for the daemon and for every
// other client alike.

// LockFile is the file in the daemon's directory that a daemon on a store
// server holds locked while it runs, as a daemon with its own store holds
// the bbolt file's lock: one daemon per directory.
const LockFile = "daemon.lock"

// lockTimeout is how long a daemon waits for the directory another one
// holds, as long as for a bbolt file.
const lockTimeout = 5 * time.Second

// storeServerClient returns a client of cfg.StoreServer, with cfg's token
// and TLS configuration, once it holds the lock of cfg.Dir, and what
// closes both.
func storeServerClient(cfg DaemonConfig) (*httpstore.Client[*Job], func() error, error) {
	unlock, err := lockDir(cfg.Dir, lockTimeout)
	if err != nil {
		return nil, nil, err
	}
	var opts []httpstore.ClientOption
	if cfg.StoreToken != "" {
		opts = append(opts, httpstore.WithToken(cfg.StoreToken))
	}
	if cfg.StoreTLS != nil {
		opts = append(opts, httpstore.WithTLSConfig(cfg.StoreTLS))
	}
	c, err := httpstore.New[*Job](cfg.StoreServer, opts...)
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("jobs: store server: %w", err), unlock())
	}
	return c, func() error { return errors.Join(c.Close(), unlock()) }, nil
}

// lockDir takes the exclusive lock of dir's LockFile, waiting up to
// timeout for another process that holds it, and returns what releases it.
func lockDir(dir string, timeout time.Duration) (func() error, error) {
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f.Close, nil // closing the file releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("jobs: %s: another daemon runs in %s: %w", LockFile, dir, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// storeTLS returns the client TLS configuration of a store server: ca a
// PEM file of the CAs that sign its certificate (else the system's), cert
// and key a client certificate and its key (both or neither). It returns
// nil when no file is given.
func storeTLS(ca, cert, key string) (*tls.Config, error) {
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("%w: -store-cert and -store-key go together", store.ErrInvalid)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("-store-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: -store-ca %s holds no PEM certificate", store.ErrInvalid, ca)
		}
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("-store-cert, -store-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
