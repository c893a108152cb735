package robustness_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/stretchr/testify/require"
)

// httpChaosBackend is a bolt store served over HTTP (httpstore's handler on
// loopback, as serveHTTP serves it, without dropped connections): the
// controller and the other programs writing the store are httpstore
// clients, and Compact compacts the bolt store behind the server. Its
// heartbeat leaves room for a progress report's round trip (an HTTP request,
// then a frame on the watch stream) on a loaded machine. The chaos test runs
// it with one seed by default (10-15 s under -race on 2 cores).
func httpChaosBackend() chaosBackend {
	return chaosBackend{name: "http-bolt", heartbeat: 200 * time.Millisecond, oneSeed: true, open: func(t *testing.T, history int) (chaosStore, foreignWriter) {
		b, err := boltstore.Open[*replicaSet](filepath.Join(t.TempDir(), "chaos.db"), boltstore.WithHistory(history))
		require.NoError(t, err)
		t.Cleanup(func() { _ = b.Close() })
		served, err := serveHTTP(t, b, drops{}, 0, nil)
		require.NoError(t, err)
		s := servedChaos{served.client, b}
		return s, sequentialWriter{s}
	}}
}

// servedChaos is a client of a served bolt store whose Compact compacts
// the store behind the server.
type servedChaos struct {
	*httpstore.Client[*replicaSet]
	bolt *boltstore.Store[*replicaSet]
}

func (s servedChaos) Compact(ctx context.Context, rev int64) error { return s.bolt.Compact(ctx, rev) }
