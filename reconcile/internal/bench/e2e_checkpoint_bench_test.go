package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/converge-go/converge/store/boltstore"
)

// checkpointRounds counts the rounds of BenchmarkE2ECheckpoint across its
// calls, so that the order of the two runs of a round alternates.
var checkpointRounds int

// BenchmarkE2ECheckpoint runs the end-to-end workload over converge
// without and with a checkpoint (boltstore.OpenCheckpoint, a new file in
// b.TempDir() each run), at two checkpoint intervals and, at the default
// one, with the values in PairCodec instead of store.JSON. One op is one
// round of both runs, in alternating order, so that the ratio of their
// settle times comes from one benchmark line. The checkpoint's figures
// (cp-*) are taken once the checkpointed run has settled (the write at
// stop excluded), but for cp-bytes, the file's size after the run, and
// cp-list-write-*, the write of the list that comes after the settle (it
// yields to the reconciles the list woke): when it ended after the
// settle, its time in Store.Write, its objects and bytes.
func BenchmarkE2ECheckpoint(b *testing.B) {
	keys := NewKeys(*e2eObjects)
	for _, v := range []struct {
		name     string
		interval time.Duration
		opts     []boltstore.Option
	}{
		{name: "interval=default"},
		{name: "interval=1s", interval: time.Second},
		{name: "interval=default/codec=binary", opts: []boltstore.Option{boltstore.WithCodec[*Pair](PairCodec{})}},
	} {
		b.Run(v.name, func(b *testing.B) {
			dir := b.TempDir()
			var plain, with E2EResult
			var cost CheckpointCost
			for range b.N {
				path := filepath.Join(dir, fmt.Sprintf("checkpoint-%d", checkpointRounds))
				var c CheckpointCost
				impl := E2EImpl{Name: "converge-checkpoint", Run: func(s E2EStore, keys []string, workers int) (E2EResult, error) {
					r, cc, err := RunConvergeCheckpointed(s, keys, workers, path, v.interval, v.opts...)
					c = cc
					return r, err
				}}
				var p, w E2EResult
				if checkpointRounds%2 == 0 {
					p, w = e2eRun(b, E2EImpls()[1], keys, true), e2eRun(b, impl, keys, true)
				} else {
					w, p = e2eRun(b, impl, keys, true), e2eRun(b, E2EImpls()[1], keys, true)
				}
				checkpointRounds++
				if err := os.Remove(path); err != nil {
					b.Fatal(err)
				}
				if c.FinalWrites < 1 {
					b.Fatal("no checkpoint written")
				}
				plain.Settled += p.Settled
				plain.CPU += p.CPU
				plain.Lists += p.Lists
				with.Settled += w.Settled
				with.CPU += w.CPU
				with.Lists += w.Lists
				cost.add(c)
			}
			reportCheckpointCost(b, plain, with, cost, len(keys))
		})
	}
}

// add adds the counts of c to cost.
func (cost *CheckpointCost) add(c CheckpointCost) {
	cost.Until += c.Until
	cost.Writes += c.Writes
	cost.Objects += c.Objects
	cost.WriteTime += c.WriteTime
	cost.FileBytes += c.FileBytes
	cost.Deferred += c.Deferred
	cost.DeferredTime += c.DeferredTime
	cost.DeferredObjects += c.DeferredObjects
	if c.DeferredWritten < 0 || cost.DeferredWritten < 0 {
		cost.DeferredWritten = -1
	} else {
		cost.DeferredWritten += c.DeferredWritten
	}
	if c.Written < 0 || cost.Written < 0 {
		cost.Written = -1 // not available
	} else {
		cost.Written += c.Written
	}
}

// reportCheckpointCost reports the sums of b.N rounds.
func reportCheckpointCost(b *testing.B, plain, with E2EResult, cost CheckpointCost, objects int) {
	n := float64(b.N)
	msPerOp(b, plain.Settled, "plain-settle-ms")
	msPerOp(b, with.Settled, "settle-ms")
	b.ReportMetric(float64(with.Settled)/float64(plain.Settled), "settle-ratio")
	msPerOp(b, plain.CPU, "plain-cpu-ms")
	msPerOp(b, with.CPU, "cpu-ms")
	b.ReportMetric(float64(plain.Lists)/n, "plain-lists/op")
	b.ReportMetric(float64(with.Lists)/n, "lists/op")
	b.ReportMetric(float64(cost.FileBytes)/n, "cp-bytes")
	b.ReportMetric(float64(cost.FileBytes)/n/float64(objects), "cp-bytes/object")
	b.ReportMetric(float64(cost.Writes)/n, "cp-writes/op")
	b.ReportMetric(float64(cost.Writes)/cost.Until.Seconds(), "cp-writes/s")
	b.ReportMetric(float64(cost.Objects)/n, "cp-objects/op")
	msPerOp(b, cost.WriteTime, "cp-write-ms")
	msPerOp(b, cost.Deferred, "cp-list-write-after-settle-ms")
	msPerOp(b, cost.DeferredTime, "cp-list-write-ms")
	b.ReportMetric(float64(cost.DeferredObjects)/n, "cp-list-write-objects")
	if cost.DeferredWritten >= 0 {
		b.ReportMetric(float64(cost.DeferredWritten)/n, "cp-list-write-B")
	}
	if cost.Written >= 0 {
		b.ReportMetric(float64(cost.Written)/n, "cp-written-B/op")
		b.ReportMetric(float64(cost.Written)/cost.Until.Seconds(), "cp-written-B/s")
	}
}
