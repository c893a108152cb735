package main

import (
	"context"
	"io"
)

// DemoConfig configures runDemo.
type DemoConfig struct {
	Out io.Writer
}

// runDemo runs the narrated demo (not yet: prints the usage).
func runDemo(ctx context.Context, cfg DemoConfig) error { return errUsage }
