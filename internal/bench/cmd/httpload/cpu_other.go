//go:build !unix

package main

import "time"

// processCPU is not measured on this platform: the CPU column reads 0.
func processCPU() time.Duration { return 0 }
