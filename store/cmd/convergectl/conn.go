package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"github.com/converge-go/converge/internal/privatefile"
	"github.com/converge-go/converge/internal/tokenfile"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
)

// client returns a client of the server the flags (or the environment)
// name, with their token and TLS configuration.
func (f *globalFlags) client() (*httpstore.Client[value], error) {
	server, err := f.serverURL()
	if err != nil {
		return nil, err
	}
	cfg, err := f.tlsConfig()
	if err != nil {
		return nil, err
	}
	opts := []httpstore.ClientOption{httpstore.WithTLSConfig(cfg)}
	tok, err := f.bearerToken()
	if err != nil {
		return nil, err
	}
	if tok != "" {
		opts = append(opts, httpstore.WithToken(tok))
	}
	return httpstore.New[value](server, opts...)
}

// bearerToken returns the token to send: -token-file's, else -token, else
// $CONVERGE_TOKEN, else none. -token-file is read as the daemons read
// theirs (internal/tokenfile): a file others may read or change, another
// user's, a symbolic link, or one not holding one token is refused
// (tokenfile.ErrUnsafe), naming the file. No error repeats the token.
func (f *globalFlags) bearerToken() (string, error) {
	if f.tokenFile == "" {
		return strings.TrimSpace(cmp.Or(f.token, os.Getenv("CONVERGE_TOKEN"))), nil
	}
	tok, ok, err := tokenfile.Read(f.tokenFile)
	switch {
	case err != nil:
		return "", fmt.Errorf("-token-file: %w", err)
	case !ok:
		return "", fmt.Errorf("-token-file: %w", &fs.PathError{Op: "open", Path: f.tokenFile, Err: fs.ErrNotExist})
	}
	return tok, nil
}

// tlsConfig returns the configuration of https connections: -cacert's
// roots (else the system's) and -cert's certificate. Without one, it
// records whether a server asks for a client certificate (explain).
func (f *globalFlags) tlsConfig() (*tls.Config, error) {
	if err := f.checkFiles(); err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.caFile != "" {
		pem, err := os.ReadFile(f.caFile)
		if err != nil {
			return nil, fmt.Errorf("-cacert: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: -cacert %s: no PEM certificate in it", errInvalid, f.caFile)
		}
	}
	if f.certFile == "" {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			f.certRequested.Store(true)
			return &tls.Certificate{}, nil // none: the server decides
		}
		return cfg, nil
	}
	cert, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
	if err != nil {
		return nil, fmt.Errorf("-cert, -key: %w", err)
	}
	cfg.Certificates = []tls.Certificate{cert}
	return cfg, nil
}

// errCertRequired: the server asked for a client certificate, convergectl
// had none, and the request got no answer. A server that requires one
// ends the connection (a TLS alert, or a reset that loses the alert).
var errCertRequired = errors.New("the server requires a client certificate: give -cert and -key")

// explain returns err with what it means for the user, when the flags
// tell more than the error does.
func (f *globalFlags) explain(err error) error {
	noAnswer := errors.Is(err, store.ErrUnavailable) && !errors.Is(err, httpstore.ErrProtocol) &&
		!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
	if noAnswer && f.certRequested.Load() {
		return fmt.Errorf("%w (%w)", errCertRequired, err)
	}
	return err
}

// checkFiles refuses, as internal/privatefile does, a -key file others
// may read or change, or another user's, as ssh refuses such a key, and a
// -cacert or -cert file another user may change: whoever may add a CA to
// -cacert can pass for the server and receive the token. With
// -insecure-permissions it warns of them instead.
func (f *globalFlags) checkFiles() error {
	var log *slog.Logger
	if f.warnings != nil {
		log = slog.New(slog.NewTextHandler(f.warnings, nil))
	}
	return privatefile.CheckPlaces(log, f.insecurePermissions,
		privatefile.Place{Flag: "-cacert", Path: f.caFile, Check: privatefile.Trusted},
		privatefile.Place{Flag: "-cert", Path: f.certFile, Check: privatefile.Trusted},
		privatefile.Place{Flag: "-key", Path: f.keyFile, Check: privatefile.Secret})
}
