package main

import (
	"context"
	"errors"
	"testing"

	"github.com/converge-go/converge/examples/internal/demo"
)

// The operator's debug page has no token: RunDaemon refuses an address
// that is not loopback, before it connects to anything, unless
// InsecureNoToken accepts it.
func TestTheOperatorRefusesToServeItsDebugPageBeyondLoopbackUnlessTold(t *testing.T) {
	// A daemon that started would stop at once.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, addr := range []string{":0", "0.0.0.0:0", "[::]:0", "192.0.2.1:7018"} {
		err := RunDaemon(ctx, DaemonConfig{Addr: addr, StoreServer: "http://127.0.0.1:1/store",
			DSN: "postgres://app@127.0.0.1:1/app"})
		if !errors.Is(err, demo.ErrNotLoopback) {
			t.Errorf("RunDaemon with -addr %s: %v, want an error matching demo.ErrNotLoopback", addr, err)
		}
	}
}
