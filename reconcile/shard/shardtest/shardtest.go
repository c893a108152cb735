// Package shardtest runs reconcile/shard replicas in tests: each over its
// own fault-injecting view of a shared byte store, so that a test can stop
// one in order (it leaves, its buckets are handed over at once) or crash
// it (its store unreachable, nothing released: its buckets wait for the
// takeover after its lease's TTL).
package shardtest

import (
	"context"
	"sync"
	"testing"

	"github.com/converge-go/converge/reconcile/shard"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
)

// Replica is a running shard.Replica of a test.
type Replica struct {
	*shard.Replica
	tb     testing.TB
	fs     *faultstore.Store[[]byte]
	cancel context.CancelFunc
	done   chan error
	ended  bool
}

// Start runs a shard.Replica with opts over raw (through a
// faultstore.Store of its own) until Stop or Crash. It fails tb if the
// replica cannot be made. Call Stop or Crash before the test ends (in a
// synctest bubble, a replica left running fails the test).
func Start(tb testing.TB, raw store.Store[[]byte], opts shard.Options) *Replica {
	tb.Helper()
	return start(tb, raw, opts, nil)
}

// start is Start, closing took (if not nil) when the replica first takes
// buckets.
func start(tb testing.TB, raw store.Store[[]byte], opts shard.Options, took chan struct{}) *Replica {
	tb.Helper()
	fs, err := faultstore.New[[]byte](raw, faultstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	rep, err := shard.New(fs, opts)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Replica{Replica: rep, tb: tb, fs: fs, cancel: cancel, done: make(chan error, 1)}
	if took != nil {
		var once sync.Once
		stop := rep.Subscribe(func(func(string) bool, int64) { once.Do(func() { close(took) }) })
		go func() { <-took; stop() }()
	}
	go func() { r.done <- rep.Run(ctx) }()
	return r
}

// StartEach starts a replica for each of ids over raw with opts (ID set
// to each), one after the other: each once the previous one has taken a
// bucket, so the first is the assigner. The later ones may still be taking
// their share when it returns.
func StartEach(tb testing.TB, raw store.Store[[]byte], opts shard.Options, ids ...string) []*Replica {
	tb.Helper()
	out := make([]*Replica, len(ids))
	for i, id := range ids {
		opts.ID = id
		took := make(chan struct{})
		out[i] = start(tb, raw, opts, took)
		<-took
	}
	return out
}

// Stop ends the replica's Run and waits for it: the replica leaves, and
// its buckets are handed over at once. It fails the test if Run returned
// an error. Later calls do nothing.
func (r *Replica) Stop() {
	r.tb.Helper()
	if r.ended {
		return
	}
	r.ended = true
	r.cancel()
	if err := <-r.done; err != nil {
		r.tb.Errorf("shard replica: Run: %v", err)
	}
}

// Crash cuts the replica off its store (every call fails, every watch
// ends) and then ends its Run, as a process killed or partitioned away:
// it releases nothing, and its buckets are ownerless until the assigner
// takes them over (see shard's handover bound).
func (r *Replica) Crash() {
	r.tb.Helper()
	r.fs.SetOutage(faultstore.Loud)
	r.Stop()
}

// Faults returns the faultstore.Store the replica reaches its store
// through, for faults of the test's own (SetPlan, SetOutage): refusing
// the assigner's writes of owner records, for instance, holds a crashed
// replica's buckets ownerless for as long as the test looks.
func (r *Replica) Faults() *faultstore.Store[[]byte] { return r.fs }
