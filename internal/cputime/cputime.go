// Package cputime reads the CPU time this process has used, for
// benchmarks and measurements that report CPU per operation: on a shared
// machine that figure moves much less than wall-clock time.
package cputime

import "time"

// Process returns the user and system CPU time this process has used so
// far, all its threads together; 0 where the platform cannot tell. Take
// the difference of two calls.
func Process() time.Duration { return process() }
