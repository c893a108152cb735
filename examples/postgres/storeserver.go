package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore"
)

// storeServer is the store the demo and the tests run the operator on: a
// store served over HTTP with the API-server layer and the kinds' rules of
// kinds.json, on loopback, behind a token, as the convergestore command
// serves one, so that the operator's processes come and go while the
// desired state stays, and convergectl (or any httpstore client) edits it
// meanwhile.
type storeServer struct {
	// URL is the store's base URL; TokenFile holds its token (mode 0600).
	URL, TokenFile string
	token          string
	mem            *store.Memory[json.RawMessage] // the store below the layer
	srv            *http.Server
	done           chan error
	closeOnce      sync.Once
	closeErr       error
}

// startStoreServer serves a new, empty store (its own identity) and
// writes its token into dir.
func startStoreServer(dir string) (*storeServer, error) {
	opts, err := admission()
	if err != nil {
		return nil, err
	}
	mem := store.NewMemory[json.RawMessage]()
	layer, err := apistore.New[json.RawMessage](mem, apistore.JSONKind{}, opts...)
	if err != nil {
		return nil, err
	}
	s := &storeServer{TokenFile: filepath.Join(dir, "store-token"), token: rand.Text(), mem: mem, done: make(chan error, 1)}
	if err := os.WriteFile(s.TokenFile, []byte(s.token+"\n"), 0o600); err != nil {
		return nil, err
	}
	h, err := httpstore.NewHandler[json.RawMessage](layer, httpstore.WithReadWriteToken(s.token))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/store/", http.StripPrefix("/store", h))
	s.srv = httpstore.NewServer("", mux)
	s.URL = "http://" + ln.Addr().String() + "/store"
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Close stops serving: watch streams end at once, requests in flight
// finish. Closing again does nothing and returns the first Close's error.
func (s *storeServer) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.closeErr = s.srv.Shutdown(ctx)
		if serveErr := <-s.done; !errors.Is(serveErr, http.ErrServerClosed) {
			s.closeErr = errors.Join(s.closeErr, serveErr)
		}
	})
	return s.closeErr
}

// stores returns clients of the served store, and what closes them.
func (s *storeServer) stores() (Stores, func() error, error) { return dialStores(s.URL, s.token) }
