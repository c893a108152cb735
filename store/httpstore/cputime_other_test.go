//go:build !unix

package httpstore_test

import "time"

// processCPU is not measured on this platform (the metric reads 0).
func processCPU() time.Duration { return 0 }
