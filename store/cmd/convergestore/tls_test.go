package main

import (
	"crypto/tls"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/converge-go/converge/internal/testcerts"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
)

func TestOverTLSWithClientCertificatesOnlyClientsWithACertificateAreServed(t *testing.T) {
	p, err := testcerts.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, t.TempDir(), "-tls-cert", p.ServerCert, "-tls-key", p.ServerKey, "-client-ca", p.CA)
	if !strings.HasPrefix(s.url, "https://127.0.0.1:") {
		t.Fatalf("the URL announced over TLS: %s", s.url)
	}
	tok := s.token(t)
	good := client[raw](t, s.url, tok, httpstore.WithTLSConfig(&tls.Config{RootCAs: p.Roots, Certificates: []tls.Certificate{p.Client}}))
	obj, err := good.Create(t.Context(), "a", raw(`{"spec":1}`))
	if err != nil {
		t.Fatalf("a client with a certificate: %v", err)
	}
	noCert := client[raw](t, s.url, tok, httpstore.WithTLSConfig(&tls.Config{RootCAs: p.Roots}))
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
