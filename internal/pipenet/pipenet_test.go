package pipenet_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/converge-go/converge/internal/pipenet"
)

// TestAServerOnTheNetworkAnswersItsClientsUntilClosed: inside a synctest
// bubble, an HTTP server on a Listener answers a request of the Listener's
// Client; once the Listener is closed, Accept and DialContext return
// net.ErrClosed.
func TestAServerOnTheNetworkAnswersItsClientsUntilClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := pipenet.New()
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "hello")
		})}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(l) }()
		hc := l.Client()
		resp, err := hc.Get("http://anywhere.example/")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(body) != "hello" {
			t.Fatalf("answer %q, %v", body, err)
		}
		hc.CloseIdleConnections()
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Fatalf("Serve: %v", err)
		}
		if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v", err)
		}
		if _, err := l.DialContext(t.Context(), "tcp", "x:1"); !errors.Is(err, net.ErrClosed) {
			t.Errorf("DialContext after Close: %v", err)
		}
		if a := l.Addr(); a.Network() != "pipe" || a.String() != "pipe" {
			t.Errorf("Addr %s %s", a.Network(), a.String())
		}
	})
}
