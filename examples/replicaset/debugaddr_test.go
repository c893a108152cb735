package main

import (
	"errors"
	"testing"

	"github.com/converge-go/converge/examples/internal/demo"
)

// The demo's debug page and metrics have no token: Run refuses an -http
// address that is not loopback, before it starts anything, unless
// InsecureNoToken accepts it.
func TestTheDemoRefusesToServeItsDebugPageBeyondLoopbackUnlessTold(t *testing.T) {
	for _, addr := range []string{":8080", "0.0.0.0:0", "[::]:0", "192.0.2.1:8080"} {
		_, err := Run(t.Context(), Config{Replicas: 1, HTTPAddr: addr})
		if !errors.Is(err, demo.ErrNotLoopback) {
			t.Errorf("Run with -http %s: %v, want an error matching demo.ErrNotLoopback", addr, err)
		}
	}
}
