package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/apistore/schema"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/httpstore"
)

// StoreFile is the store's bbolt file in the server's directory.
const StoreFile = "store.db"

// StorePath is where the store is mounted: clients use
// http://HOST:PORT/store as its URL.
const StorePath = "/store"

// serve serves the store of cfg.dir until ctx ends, then stops the server
// (watches end at once) and closes the store. It opens the store before it
// reads or generates a token, so that of two servers started on one
// directory, the one that gets the store's lock is the one that makes the
// token.
func serve(ctx context.Context, cfg config, stdout io.Writer, log *slog.Logger) (err error) {
	if err := checkPlaces(cfg, log); err != nil {
		return err
	}
	admission, kindsDoc, err := loadKinds(cfg.kinds)
	if err != nil {
		return err
	}
	tlsCfg, err := cfg.tlsConfig()
	if err != nil {
		return err
	}
	// The Kind the layer serves, and every restore checks values by.
	kind := apistore.JSONKind{}
	s, err := prepareStore(cfg, kind, stdout, log)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	toks, err := loadTokens(cfg)
	if err != nil {
		return err
	}
	layer, err := apistore.New[json.RawMessage](s, kind, admission...)
	if err != nil {
		return err
	}
	m, url, err := newServer(layer, cfg, toks, kindsDoc, tlsCfg, log)
	if err != nil {
		return err
	}
	if err := addSaver(m, s, cfg, log); err != nil {
		return err
	}
	if err := addShipper(m, s, cfg, log); err != nil {
		return err
	}
	announce(stdout, log, cfg, toks, url, tlsCfg != nil)
	if err := m.Run(ctx); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// openStore opens the store file, waiting cfg.lockTimeout for another
// process that holds it; its errors say what the file's trouble is and
// keep boltstore's error for exitCode.
func openStore(cfg config) (*boltstore.Store[json.RawMessage], error) {
	path := filepath.Join(cfg.dir, StoreFile)
	s, err := boltstore.Open[json.RawMessage](path, boltstore.WithLockTimeout(cfg.lockTimeout))
	switch {
	case errors.Is(err, boltstore.ErrLocked):
		return nil, fmt.Errorf("the store file %s is held by another process (another convergestore serving %s?): %w", path, cfg.dir, err)
	case errors.Is(err, boltstore.ErrCorrupt):
		return nil, fmt.Errorf("the store file %s is damaged, and was left as it is (recover it from snapshots with -recover-from DIR, restore it from a copy, or move it away to start an empty store): %w", path, err)
	case errors.Is(err, boltstore.ErrFormat):
		return nil, fmt.Errorf("%s is not a store file of this program, and was left as it is: %w", path, err)
	}
	return s, err
}

// newServer returns the manager serving h's store at StorePath, with the
// probes, behind toks (every token opens the server; the handler then
// lets read-only tokens read only), declaring kindsDoc (if not nil) to its
// clients, and the store's URL.
func newServer(s *apistore.Store[json.RawMessage], cfg config, toks tokens, kindsDoc []byte, tlsCfg *tls.Config, log *slog.Logger) (*manager.Manager, string, error) {
	hopts := []httpstore.HandlerOption{httpstore.WithAllowedHosts(cfg.allowHosts...), httpstore.WithHeartbeat(cfg.heartbeat)}
	if kindsDoc != nil {
		hopts = append(hopts, httpstore.WithKinds(kindsDoc))
	}
	for _, t := range toks.rw {
		hopts = append(hopts, httpstore.WithReadWriteToken(t))
	}
	for _, t := range toks.ro {
		hopts = append(hopts, httpstore.WithReadOnlyToken(t))
	}
	h, err := httpstore.NewHandler[json.RawMessage](s, hopts...)
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return nil, "", err
	}
	m, err := manager.New(manager.Options{
		Logger: log,
		Server: &manager.ServerOptions{Listener: ln, TLS: tlsCfg, Tokens: toks.all(), AllowedHosts: cfg.allowHosts},
	})
	if err == nil {
		err = m.Handle(StorePath+"/", http.StripPrefix(StorePath, h))
	}
	if err != nil {
		ln.Close()
		return nil, "", err
	}
	return m, storeURL(ln.Addr(), tlsCfg != nil), nil
}

// storeURL returns the URL clients use for a server listening on addr: an
// address of every interface is named by the loopback one.
func storeURL(addr net.Addr, tls bool) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		host, port = addr.String(), ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + StorePath
}

// announce prints what is served and where the token is (never the
// token), and warns of what is exposed. The announcement is one write,
// so that a program waiting for its first line reads all of it.
func announce(w io.Writer, log *slog.Logger, cfg config, toks tokens, url string, tls bool) {
	var b strings.Builder
	fmt.Fprintf(&b, "convergestore: serving %s\n", url)
	fmt.Fprintf(&b, "convergestore: store file %s\n", filepath.Join(cfg.dir, StoreFile))
	switch {
	case toks.generated != "":
		fmt.Fprintf(&b, "convergestore: read-write token in %s\n", toks.generated)
	case len(toks.rw) > 0:
		fmt.Fprintf(&b, "convergestore: read-write token in %s\n", strings.Join(cfg.tokenFiles, ", "))
	default:
		fmt.Fprintln(&b, "convergestore: no token: whoever reaches the address may read and write")
		log.Warn("serving without a token (-insecure-no-token): every program that can reach the address may read and write the store", "url", url)
	}
	if len(toks.ro) > 0 {
		fmt.Fprintf(&b, "convergestore: read-only token in %s\n", strings.Join(cfg.readTokenFiles, ", "))
	}
	io.WriteString(w, b.String())
	if !tls && !loopback(cfg.addr) {
		log.Warn("serving beyond loopback without TLS: tokens and values cross the network in clear", "addr", cfg.addr)
	}
	log.Info("serving", "url", url, "dir", cfg.dir, "tls", tls, "read-only tokens", len(toks.ro))
}

// loopback reports whether addr's host is a loopback address or
// "localhost".
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// tlsConfig returns the server's TLS configuration (nil without
// -tls-cert): its certificate and, with -client-ca, the requirement of a
// client certificate signed by one of those CAs.
func (cfg *config) tlsConfig() (*tls.Config, error) {
	if cfg.tlsCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(cfg.tlsCert, cfg.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("-tls-cert, -tls-key: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if cfg.clientCA == "" {
		return tc, nil
	}
	pem, err := os.ReadFile(cfg.clientCA)
	if err != nil {
		return nil, fmt.Errorf("-client-ca: %w", err)
	}
	tc.ClientCAs = x509.NewCertPool()
	if !tc.ClientCAs.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("-client-ca %s: no PEM certificate in it", cfg.clientCA)
	}
	tc.ClientAuth = tls.RequireAndVerifyClientCert
	return tc, nil
}

// loadKinds reads the kind rules of the file named (none if ""), for the
// layer's admission, and the file's content, which the server declares to
// its clients (printer columns).
func loadKinds(name string) ([]apistore.Option[json.RawMessage], []byte, error) {
	if name == "" {
		return nil, nil, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, fmt.Errorf("-kinds: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, schema.MaxRulesSize+1))
	if err != nil {
		return nil, nil, fmt.Errorf("-kinds: %w", err)
	}
	rules, err := schema.Parse(data)
	if err != nil {
		return nil, nil, fmt.Errorf("-kinds %s: %w", name, err)
	}
	return rules.Options(), data, nil
}
