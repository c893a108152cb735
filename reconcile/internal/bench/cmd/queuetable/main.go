// Command queuetable turns the output of the queue and end-to-end
// benchmarks into the Markdown tables of reconcile/internal/bench/README.md. It reads
// `go test -bench` output on standard input and prints, for every scenario,
// one row per metric and one column per implementation (the median over
// -count runs), followed by client-go's value divided by converge's, so
// that a ratio above 1 means converge is smaller or faster. For rates
// (units ending in "/s", where higher is better) the ratio is inverted,
// converge's value divided by client-go's, so that above 1 still means
// converge is better.
//
//	go test -run '^$' -bench Queue -benchmem -count 5 | go run ./cmd/queuetable
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// baseline and subject name the two columns the ratio compares.
const (
	baseline = "client-go"
	subject  = "converge"
)

func main() {
	res, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "queuetable:", err)
		os.Exit(1)
	}
	if err := res.write(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "queuetable:", err)
		os.Exit(1)
	}
}

// results holds every sample, in the order scenarios, implementations and
// metrics first appeared.
type results struct {
	scenarios []string
	impls     []string
	metrics   map[string][]string             // scenario → units
	samples   map[string]map[string][]float64 // scenario/impl → unit → values
}

// parse reads benchmark result lines such as
//
//	BenchmarkQueueS1AddGetDone/converge-2  1000  123 ns/op  0 B/op
//
// and ignores every other line.
func parse(r io.Reader) (*results, error) {
	res := &results{metrics: map[string][]string{}, samples: map[string]map[string][]float64{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") || len(fields)%2 != 0 {
			continue
		}
		scenario, impl, ok := strings.Cut(strings.TrimPrefix(fields[0], "Benchmark"), "/")
		if !ok {
			continue
		}
		impl = trimProcs(impl)
		if !slices.Contains(res.scenarios, scenario) {
			res.scenarios = append(res.scenarios, scenario)
		}
		if !slices.Contains(res.impls, impl) {
			res.impls = append(res.impls, impl)
		}
		id := scenario + "/" + impl
		if res.samples[id] == nil {
			res.samples[id] = map[string][]float64{}
		}
		for i := 2; i < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: value %q: %w", fields[0], fields[i], err)
			}
			unit := fields[i+1]
			if !slices.Contains(res.metrics[scenario], unit) {
				res.metrics[scenario] = append(res.metrics[scenario], unit)
			}
			res.samples[id][unit] = append(res.samples[id][unit], v)
		}
	}
	return res, sc.Err()
}

// trimProcs removes the -GOMAXPROCS suffix go test adds to a name.
func trimProcs(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}

// median returns the median of vs, and false if there are none.
func median(vs []float64) (float64, bool) {
	if len(vs) == 0 {
		return 0, false
	}
	s := slices.Sorted(slices.Values(vs))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2, true
	}
	return s[len(s)/2], true
}

// write prints one table per scenario.
func (res *results) write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, scenario := range res.scenarios {
		fmt.Fprintf(bw, "#### %s\n\n| metric | %s | %s ÷ %s |\n|---|%s---|\n",
			scenario, strings.Join(res.impls, " | "), baseline, subject,
			strings.Repeat("--:|", len(res.impls)))
		for _, unit := range res.metrics[scenario] {
			shown, scale := res.display(scenario, unit)
			fmt.Fprintf(bw, "| %s |", shown)
			for _, impl := range res.impls {
				v, ok := median(res.samples[scenario+"/"+impl][unit])
				fmt.Fprintf(bw, " %s |", format(v/scale, ok))
			}
			fmt.Fprintf(bw, " %s |\n", res.ratio(scenario, unit))
		}
		fmt.Fprintln(bw)
	}
	return bw.Flush()
}

// display returns the unit to show a metric in and the divisor to get
// there: ns/op becomes ms/op when every implementation takes a millisecond
// or more.
func (res *results) display(scenario, unit string) (string, float64) {
	if unit != "ns/op" {
		return unit, 1
	}
	for _, impl := range res.impls {
		if v, ok := median(res.samples[scenario+"/"+impl][unit]); ok && v < 1e6 {
			return unit, 1
		}
	}
	return "ms/op", 1e6
}

// ratio returns the baseline's median divided by the subject's (the
// other way round for a rate), or a dash.
func (res *results) ratio(scenario, unit string) string {
	b, okB := median(res.samples[scenario+"/"+baseline][unit])
	s, okS := median(res.samples[scenario+"/"+subject][unit])
	if isRate(unit) {
		b, s = s, b
	}
	if !okB || !okS || s == 0 {
		return "—"
	}
	return strconv.FormatFloat(b/s, 'f', 2, 64) + "×"
}

// isRate reports whether unit is a rate (per second), where higher is better.
func isRate(unit string) bool { return strings.HasSuffix(unit, "/s") }

// format prints v with about three significant digits, or a dash.
func format(v float64, ok bool) string {
	if !ok {
		return "—"
	}
	abs := max(v, -v)
	switch {
	case abs >= 100 || v == float64(int64(v)):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case abs >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}
