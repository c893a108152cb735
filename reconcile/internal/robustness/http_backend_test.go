package robustness_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/converge-go/converge/reconcile/internal/robustness"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
)

// The HTTP store's timing in these tests: a heartbeat short enough that
// controllers over it detect outages quickly, and a watch timeout long
// enough that a loaded machine running -race never judges a live stream
// dead (a cut stream is noticed at once: its connection closes).
const (
	httpHeartbeat    = 50 * time.Millisecond
	httpWatchTimeout = 2 * time.Second
)

// httpServed is a store served by httpstore on an httptest server, behind
// a dropper, and a client of it.
type httpServed[T any] struct {
	srv    *httptest.Server
	client *httpstore.Client[T]
	d      *dropper
	tr     *callTransport
}

// serveHTTP serves s over HTTP on loopback with httpstore's recommended
// server settings, cutting connections as p says (seeded by seed; what
// became of cut calls goes to outcomes, which may be nil), and returns a
// client of it whose requests carry their recorded call's id. The server
// and the client's connections are closed at t's cleanup, before s.
func serveHTTP[T any](t testing.TB, s store.Store[T], p drops, seed uint64, outcomes *robustness.Outcomes) (*httpServed[T], error) {
	h, err := httpstore.NewHandler(s, httpstore.WithHeartbeat(httpHeartbeat))
	if err != nil {
		return nil, err
	}
	d := newDropper(h, p, seed, outcomes)
	srv := httptest.NewUnstartedServer(d)
	httpstore.ApplyServerDefaults(srv.Config)
	srv.Config.ConnContext = withConn
	srv.Start()
	t.Cleanup(srv.Close)
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 64
	t.Cleanup(base.CloseIdleConnections)
	tr := &callTransport{base: base}
	hc := &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	c, err := httpstore.New[T](srv.URL, httpstore.WithHTTPClient(hc), httpstore.WithWatchTimeout(httpWatchTimeout))
	if err != nil {
		return nil, err
	}
	return &httpServed[T]{srv: srv, client: c, d: d, tr: tr}, nil
}

// httpRun is what the HTTP transport of a robustness run did.
type httpRun struct {
	served *httpServed[robustness.Value]
	// watches counts the Watch calls on the client: every stream opened
	// beyond them is a reconnect the client made by itself.
	watches atomic.Int64
}

// countWatches is a store whose Watch calls are counted in n.
type countWatches struct {
	store.Store[robustness.Value]
	n *atomic.Int64
}

func (s countWatches) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[robustness.Value], error) {
	s.n.Add(1)
	return s.Store.Watch(ctx, prefix, after)
}

// overHTTP is b served over HTTP: the recorded clients and the watcher are
// httpstore clients of b's store (behind the fault store) served by a
// handler behind a dropper cutting connections as p says. Unless b has a
// Disrupt of its own, Disrupt cuts every connection at once, as a server
// restart would.
func overHTTP(b robustness.Backend, p drops, seed uint64) (robustness.Backend, *httpRun) {
	run := &httpRun{}
	b.Name = "http-" + b.Name
	b.Serve = func(t testing.TB, s store.Store[robustness.Value], o *robustness.Outcomes) (store.Store[robustness.Value], error) {
		served, err := serveHTTP(t, s, p, seed, o)
		if err != nil {
			return nil, err
		}
		run.served = served
		return countWatches{served.client, &run.watches}, nil
	}
	if b.Disrupt == nil {
		b.Disrupt = func(testing.TB) error {
			run.served.srv.CloseClientConnections()
			return nil
		}
	}
	return b, run
}
