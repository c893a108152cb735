package main

import (
	"testing"

	"github.com/converge-go/converge/examples/internal/demo"
)

// TestMain runs this test binary as a pod when the demo's supervisor
// starts it, and otherwise fails if a test left a goroutine behind.
func TestMain(m *testing.M) { demo.TestMain(m) }
