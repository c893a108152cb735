// Command sharded runs a controller's keys across several replica
// processes that share etcd, with reconcile/shard: keys map to buckets,
// each bucket has one owner at a time, and every write a reconcile makes
// carries its bucket's fencing epoch. The narrated demo shows the buckets
// spreading out, replicas joining, one SIGKILLed and its buckets taken
// over after the TTL, a late write from a replica paused beyond the TTL
// refused with store.ErrGuardFailed, and throughput rising with replicas.
// At the end, every reconcile and every accepted write of the run is
// checked: no key reconciled by two replicas at once, no write accepted
// from a replica that did not own the key's bucket. The reconciler is in
// reconciler.go; main.go only wires.
//
// The replicas are this program again, in replica mode (replica.go). In
// each, the reconciler runs wrapped: recorded (record.go) appends records
// of its reconciles and accepted writes to a shared file, which the parent
// reads to narrate and check (check.go), and, for the measurements and
// exclusivity runs, churning (churn.go) makes every reconcile write and
// requeue.
//
// Run it from the repository root:
//
//	go run ./examples/sharded
//	go run ./examples/sharded -etcd https://10.0.0.1:2379 -etcd-cacert ca.pem -etcd-cert me.pem -etcd-key me-key.pem
//	go run ./examples/sharded -measure     # the figures of README.md
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/internal/etcdflag"
)

const description = `sharded runs a narrated demo of sharding: replica processes of this program
share etcd (an embedded member unless -etcd names a cluster) and split the
keys, bucket by bucket, each write fenced by its bucket's epoch. Replicas
join, one is killed, one is paused beyond the TTL and its late write is
refused; every reconcile and write is checked for exclusivity at the end.
With -measure it measures throughput for 1 to 4 replicas and the handover
times instead.`

func main() {
	if os.Getenv(replicaEnv) == "1" {
		os.Exit(runReplica(os.Args[1:], os.Stderr))
	}
	etcd := etcdflag.Register(flag.CommandLine)
	measure := flag.Bool("measure", false, "measure throughput (1-4 replicas) and handover times instead of the demo")
	keys := flag.Int("keys", defaultKeys, "number of keys")
	buckets := flag.Int("buckets", defaultBuckets, "number of buckets")
	workers := flag.Int("workers", defaultWorkers, "reconciles at once per replica")
	ttl := flag.Duration("ttl", defaultTTL, "membership TTL")
	ioWait := flag.Duration("io", defaultIO, "pretend I/O per reconcile")
	noWrites := flag.Bool("no-writes", false, "with -measure: throughput of reconciles that wait their I/O and write nothing")
	demo.Main("sharded", description, func(ctx context.Context, exe string) error {
		if *keys < 1 || *buckets < 1 || *workers < 1 || *ttl <= 0 || *ioWait <= 0 {
			return fmt.Errorf("%w: -keys, -buckets, -workers, -ttl and -io must be positive", demo.ErrUsage)
		}
		cfg := Config{Etcd: *etcd, Executable: exe, Out: os.Stdout, Keys: *keys, Buckets: *buckets, Workers: *workers, TTL: *ttl, IO: *ioWait, NoWrites: *noWrites}
		if *measure {
			return Measure(ctx, cfg)
		}
		_, err := Run(ctx, cfg)
		return err
	})
}
