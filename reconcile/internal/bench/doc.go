// Package bench holds converge's side-by-side benchmarks against
// k8s.io/client-go and sigs.k8s.io/controller-runtime. It is a nested module so
// that the core module never requires either of them.
//
// The queue benchmarks (files queue_*.go) drive every implementation through
// the same Queue adapter interface and the same scenario code:
//
//	S1 AddGetDone  one goroutine: Add, Get, Done over distinct keys
//	S2 Storm       producers add over a small key space while workers drain
//	S3 Backlog     a large burst of distinct adds, then workers drain it
//	S4 Delayed     AddAfter with uniform random delays; hand-out lateness
//	S5 Retry       every key fails a few times through AddRateLimited
//
// Under go test the scenarios run at smoke-test sizes and check behaviour;
// under go test -bench they run at full size and report metrics. run.sh
// runs the full comparison and prints the table in README.md.
package bench
