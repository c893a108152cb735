package owners_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/internal/pipenet"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore"
)

// served returns a client of s served over HTTP on a pipenet; the server
// and the client's connections are closed at t's cleanup.
func served(t *testing.T, s store.Store[json.RawMessage]) *httpstore.Client[json.RawMessage] {
	t.Helper()
	h, err := httpstore.NewHandler(s)
	require.NoError(t, err)
	pn := pipenet.New()
	srv := &http.Server{Handler: h}
	httpstore.ApplyServerDefaults(srv)
	go func() { _ = srv.Serve(pn) }()
	hc := pn.Client()
	c, err := httpstore.New[json.RawMessage]("http://pipe.localhost", httpstore.WithHTTPClient(hc))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.Close()
		hc.CloseIdleConnections()
		_ = srv.Close()
	})
	return c
}

var _ apistore.PropagatingDeleter = (*httpstore.Client[json.RawMessage])(nil)
