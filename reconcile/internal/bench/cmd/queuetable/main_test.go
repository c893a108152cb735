package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkQueueS1AddGetDone/converge-2    100   50 ns/op   0 B/op
BenchmarkQueueS1AddGetDone/client-go-2   100  200 ns/op  16 B/op
BenchmarkQueueS1AddGetDone/converge-2    100   70 ns/op   0 B/op
BenchmarkQueueS1AddGetDone/client-go-2   100  100 ns/op  16 B/op
BenchmarkQueueS1AddGetDone/converge-2    100   60 ns/op   0 B/op
BenchmarkQueueS1AddGetDone/client-go-2   100  150 ns/op  16 B/op
BenchmarkQueueS2Storm/converge-2  1  2500000 ns/op
BenchmarkQueueS2Storm/client-go-2  1  5000000 ns/op
PASS
`

// write tables each benchmark's median per metric and implementation, in
// ms once ns grow large, with client-go's ratio to converge (a dash where
// converge's value is zero).
func TestWriteTablesMediansAndTheRatioToConverge(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := res.write(&out); err != nil {
		t.Fatal(err)
	}
	want := `#### QueueS1AddGetDone

| metric | converge | client-go | client-go ÷ converge |
|---|--:|--:|---|
| ns/op | 60 | 150 | 2.50× |
| B/op | 0 | 16 | — |

#### QueueS2Storm

| metric | converge | client-go | client-go ÷ converge |
|---|--:|--:|---|
| ms/op | 2.50 | 5 | 2.00× |

`
	if got := out.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

// trimProcs drops the -GOMAXPROCS suffix of a benchmark name, and leaves
// a name without one (a hyphenated one included) as it is.
func TestTrimProcsDropsOnlyTheGOMAXPROCSSuffix(t *testing.T) {
	for in, want := range map[string]string{
		"converge-2":           "converge",
		"controller-runtime-8": "controller-runtime",
		"controller-runtime":   "controller-runtime",
	} {
		if got := trimProcs(in); got != want {
			t.Errorf("trimProcs(%q) = %q, want %q", in, got, want)
		}
	}
}

// write tables custom metrics (rates, allocations per reconcile) too, with a
// column for every implementation the input names.
func TestWriteTablesCustomMetricsForEveryImplementation(t *testing.T) {
	const in = `BenchmarkE2E/store-only-2  3  50000000 ns/op  2000000 reconciles/s  2.50 allocs/reconcile
BenchmarkE2E/converge-2  1  100000000 ns/op  1000000 reconciles/s  5 allocs/reconcile
BenchmarkE2E/client-go-2  1  200000000 ns/op  500000 reconciles/s  10 allocs/reconcile
`
	res, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := res.write(&out); err != nil {
		t.Fatal(err)
	}
	want := `#### E2E

| metric | store-only | converge | client-go | client-go ÷ converge |
|---|--:|--:|--:|---|
| ms/op | 50 | 100 | 200 | 2.00× |
| reconciles/s | 2000000 | 1000000 | 500000 | 2.00× |
| allocs/reconcile | 2.50 | 5 | 10 | 2.00× |

`
	if got := out.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}
