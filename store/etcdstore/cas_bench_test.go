package etcdstore_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/converge-go/converge/internal/cputime"
	"github.com/converge-go/converge/store/etcdstore/etcdprocs"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// casBenchEnv enables BenchmarkCASProcs, which starts a cluster of etcd
// processes and runs for tens of seconds.
const casBenchEnv = "CONVERGE_ETCD_PROCS_BENCH"

const (
	casWriters = 8
	casKeys    = 1000
)

// BenchmarkCASProcs compares the compare-and-swap throughput of
// Store.Update with the same write sent as a raw clientv3 transaction (If
// the key's ModRevision is the known revision, Then put the value), on a
// 3-member cluster of separate etcd processes (etcdprocs: loopback, no
// fsync), through one client of all three members. 8 writers each own 125
// of 1,000 keys and update them in turn at the revision their last write
// returned (read-modify-write without conflicts); the value is encoded with
// encoding/json on both sides. Each benchmark iteration is one round: a
// timed phase of the Store and one of raw transactions (the order
// alternating between rounds, so drift in the machine's load falls on both),
// and the round's ratio is the Store's ops/s over the raw ops/s. Reported:
// the median and quartiles of the ratio over the rounds, the pooled ratio
// (the Store's mean ops/s over the raw mean), each side's median ops/s, and
// each side's median CPU time per update in this process (the client) and
// in the three etcd processes together (from getrusage and /proc: Linux
// only), which the machine's load disturbs far less than throughput. It is skipped unless CONVERGE_ETCD_PROCS_BENCH=1;
// CONVERGE_ETCD_PROCS_BENCH_PHASE sets a phase's length (default 3s), and
// CONVERGE_ETCD_PROCS_BENCH_RAW adds the Store's extras to the raw
// transaction, to attribute the difference: a comma-separated subset of
// prevkv (the put returns the previous key-value), else (a keys-only read of
// the key in the else branch) and leader (clientv3.WithRequireLeader);
// CONVERGE_ETCD_PROCS_BENCH_VALUE sets the length of the value's string (by
// default a 45-byte sentence: the JSON is 58 bytes).
//
// Command (Go 1.26, linux/amd64, the project's shared 2-core VM):
//
//	CONVERGE_ETCD_PROCS_BENCH=1 go test -run '^$' -bench BenchmarkCASProcs -benchtime 8x ./store/etcdstore
//
// Figures (2026-12-01, load average 5 to 13 from other engineers' work;
// BENCHMARKS.md has every run, the CPU per update and the attribution), the
// median ratio of 60 rounds per run, before and after Update took
// CreateRevision from a keys-only read instead of the put's previous
// key-value:
//
//	58-byte values:  before 0.868, 0.862, 0.897   after 0.983, 0.917, 0.926
//	2 KiB values:    before 0.872, 0.839          after 0.941, 0.921 (24 rounds)
//
// The target (≥ 0.91) is met by the medians after the change, but one
// round's ratio varies ±15% on this shared machine (quartiles 0.74-1.12),
// so a short run can miss it by noise alone.
func BenchmarkCASProcs(b *testing.B) {
	if os.Getenv(casBenchEnv) == "" {
		b.Skipf("set %s=1 to run a 3-member etcd process cluster benchmark", casBenchEnv)
	}
	phase := 3 * time.Second
	if v := os.Getenv(casBenchEnv + "_PHASE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("%s_PHASE: %v", casBenchEnv, err)
		}
		phase = d
	}
	raw := map[string]bool{}
	for f := range strings.SplitSeq(os.Getenv(casBenchEnv+"_RAW"), ",") {
		switch f {
		case "":
		case "prevkv", "else", "leader":
			raw[f] = true
		default:
			b.Fatalf("%s_RAW: unknown feature %q", casBenchEnv, f)
		}
	}
	text := "a value of modest size, as status objects go"
	if v := os.Getenv(casBenchEnv + "_VALUE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			b.Fatalf("%s_VALUE: want a length in bytes, have %q", casBenchEnv, v)
		}
		text = strings.Repeat("v", n)
	}
	c := startProcCluster(b, 3)
	client, err := etcdprocs.Client(c.Endpoints()...)
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	ctx := b.Context()

	s := newStore(b, client, "cas/store/")
	storeRevs := make([]int64, casKeys)
	rawRevs := make([]int64, casKeys)
	value := &item{N: 1, S: text}
	for i := range casKeys {
		obj, err := s.Create(ctx, casKey(i), value)
		if err != nil {
			b.Fatal(err)
		}
		storeRevs[i] = obj.Revision
		resp, err := client.Put(ctx, "cas/raw/"+casKey(i), "{}")
		if err != nil {
			b.Fatal(err)
		}
		rawRevs[i] = resp.Header.Revision
	}

	storeUpdate := func(ctx context.Context, i int, v *item) error {
		obj, err := s.Update(ctx, casKey(i), v, storeRevs[i])
		storeRevs[i] = obj.Revision
		return err
	}
	rawUpdate := func(ctx context.Context, i int, v *item) error {
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		key := "cas/raw/" + casKey(i)
		var putOpts []clientv3.OpOption
		if raw["prevkv"] {
			putOpts = append(putOpts, clientv3.WithPrevKV())
		}
		if raw["leader"] {
			ctx = clientv3.WithRequireLeader(ctx)
		}
		txn := client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", rawRevs[i])).
			Then(clientv3.OpPut(key, string(data), putOpts...))
		if raw["else"] {
			txn = txn.Else(clientv3.OpGet(key, clientv3.WithKeysOnly()))
		}
		resp, err := txn.Commit()
		if err != nil {
			return err
		}
		if !resp.Succeeded {
			return fmt.Errorf("raw update of key %d: conflict", i)
		}
		rawRevs[i] = resp.Header.Revision
		return nil
	}

	var ratios, storeRates, rawRates, storeClient, rawClient, storeServer, rawServer []float64
	for b.Loop() {
		round := len(ratios)
		var st, rw casResult
		if round%2 == 0 {
			st = casPhase(b, ctx, c, phase, text, storeUpdate)
			rw = casPhase(b, ctx, c, phase, text, rawUpdate)
		} else {
			rw = casPhase(b, ctx, c, phase, text, rawUpdate)
			st = casPhase(b, ctx, c, phase, text, storeUpdate)
		}
		b.Logf("round %d: store %.0f ops/s %.0f+%.0f µs CPU/op, raw %.0f ops/s %.0f+%.0f µs CPU/op, ratio %.3f",
			round, st.rate, st.client, st.server, rw.rate, rw.client, rw.server, st.rate/rw.rate)
		ratios = append(ratios, st.rate/rw.rate)
		storeRates, rawRates = append(storeRates, st.rate), append(rawRates, rw.rate)
		storeClient, rawClient = append(storeClient, st.client), append(rawClient, rw.client)
		storeServer, rawServer = append(storeServer, st.server), append(rawServer, rw.server)
	}
	b.ReportMetric(quantile(ratios, 0.5), "ratio-median")
	b.ReportMetric(quantile(ratios, 0.25), "ratio-q1")
	b.ReportMetric(quantile(ratios, 0.75), "ratio-q3")
	b.ReportMetric(sum(storeRates)/sum(rawRates), "ratio-pooled")
	b.ReportMetric(quantile(storeRates, 0.5), "store-ops/s")
	b.ReportMetric(quantile(rawRates, 0.5), "raw-ops/s")
	b.ReportMetric(quantile(storeClient, 0.5), "store-client-cpu-µs/op")
	b.ReportMetric(quantile(rawClient, 0.5), "raw-client-cpu-µs/op")
	b.ReportMetric(quantile(storeServer, 0.5), "store-etcd-cpu-µs/op")
	b.ReportMetric(quantile(rawServer, 0.5), "raw-etcd-cpu-µs/op")
	b.ReportMetric(0, "ns/op") // a round's time says nothing
}

// casResult is one phase's throughput and the CPU time per update spent
// by the benchmark's process and the etcd processes together.
type casResult struct {
	rate   float64 // updates per second
	client float64 // µs of CPU per update in this process
	server float64 // µs of CPU per update in the etcd processes
}

// casPhase runs casWriters writers for d, writer w updating keys w,
// w+casWriters, ... in turn. Each key is written by one writer only, so the
// known revision is always current.
func casPhase(b *testing.B, ctx context.Context, c *procCluster, d time.Duration, text string, update func(context.Context, int, *item) error) casResult {
	b.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int
		first error
	)
	client0, server0 := casCPU(b, c)
	start := time.Now()
	deadline := start.Add(d)
	for w := range casWriters {
		wg.Go(func() {
			v := &item{S: text}
			n := 0
			for i := w; time.Now().Before(deadline); i += casWriters {
				if i >= casKeys {
					i = w
				}
				v.N++
				if err := update(ctx, i, v); err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
					return
				}
				n++
			}
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	client, server := casCPU(b, c)
	if first != nil {
		b.Fatal(first)
	}
	return casResult{
		rate:   float64(total) / elapsed.Seconds(),
		client: float64((client - client0).Microseconds()) / float64(total),
		server: float64((server - server0).Microseconds()) / float64(total),
	}
}

// casCPU returns the CPU time used so far by this process and by the etcd
// processes.
func casCPU(b *testing.B, c *procCluster) (client, server time.Duration) {
	b.Helper()
	servers, err := c.CPUTime()
	if err != nil {
		b.Fatal(err)
	}
	return cputime.Process(), servers
}

func casKey(i int) string { return "k" + strconv.Itoa(i) }

// quantile returns the q-quantile of xs (not modified), interpolating
// between the nearest ranks.
func quantile(xs []float64, q float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	pos := q * float64(len(s)-1)
	lo := int(pos)
	if lo+1 >= len(s) {
		return s[lo]
	}
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}

func sum(xs []float64) float64 {
	var t float64
	for _, x := range xs {
		t += x
	}
	return t
}
