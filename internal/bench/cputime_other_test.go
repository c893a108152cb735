//go:build !unix

package bench

import "time"

// cpuTime is not measured here: getrusage is a Unix call.
func cpuTime() time.Duration { return 0 }
