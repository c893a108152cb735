package httpstore_test

import (
	"net/http"
	"testing"

	"github.com/converge-go/converge/internal/pipenet"
	"github.com/converge-go/converge/store/httpstore"
)

// servePipe serves h on a new pipenet and returns a client of it; the
// server and the client's connections are closed at cleanup.
func servePipe(t *testing.T, h http.Handler) *httpstore.Client[*item] {
	t.Helper()
	pn := pipenet.New()
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(pn) }()
	t.Cleanup(func() { _ = srv.Close() })
	hc := pn.Client()
	t.Cleanup(hc.CloseIdleConnections)
	c, err := httpstore.New[*item]("http://pipe.localhost", httpstore.WithHTTPClient(hc))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}
