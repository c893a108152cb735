// Command failover runs the ReplicaSet controller of the replicaset example
// (examples/replicaset/controller, unchanged) as three replicas of one
// manager, elected through a lease on an embedded etcd, and narrates a
// failover: the leader converges the pods, crashes
// without releasing its lease, another replica takes over once the lease
// has gone unrenewed for a TTL and keeps converging, and a status write the
// crashed leader sent under its term, delayed in the network until after the
// takeover, is rejected by fencing. The reconciler is the replicaset
// example's, in examples/replicaset/controller/reconciler.go; main.go only
// wires.
//
// The files: demo.go wires etcd, the pods and the replicas; replica.go is
// one replica (its client, lease, elector, manager and controller);
// term.go records the terms of leadership; scenario.go plays the steps
// and network.go holds the late write; narrator.go tells the story and sums
// it up. What the replicaset demo shares with this one lives in
// examples/internal: the pods (pods), the narration, the scenario loop and
// main (demo), and the embedded etcd (embedetcd).
//
// Run it from the repository root:
//
//	go run ./examples/failover
//	go run ./examples/failover -ttl 1s
//	go run ./examples/failover -etcd https://10.0.0.1:2379 -etcd-cacert ca.pem -etcd-cert me.pem -etcd-key me-key.pem
//
// With -etcd (and the TLS flags, spelled as etcdctl spells them) it runs
// on an existing cluster, under the prefix converge-failover/, which it
// clears before and after; without, on an embedded member.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/internal/etcdflag"
)

const description = `failover runs a narrated demo of leader election and fencing. An embedded
etcd holds a replica set and a lease; three replicas of a manager, each with
its own etcd client, campaign on the lease, and the leader runs the replica
set controller, whose pods are child processes of this program. The leader
converges the pods, then crashes (cut off from etcd at once, its manager
stopped, its lease not released); another replica takes over once the lease
has gone unrenewed for a TTL and adopts the pods; a status write the crashed
leader sent under its term just before the crash, held by the network until
then, is rejected by etcd; the new leader scales the pods. On exit no pod and
no goroutine is left.`

func main() {
	etcd := etcdflag.Register(flag.CommandLine)
	ttl := flag.Duration("ttl", DefaultTTL, "lease TTL: how long the survivors wait, with the lease unrenewed, before taking over")
	demo.Main("failover", description, func(ctx context.Context, exe string) error {
		if *ttl < minTTL || *ttl > maxTTL {
			return fmt.Errorf("%w: -ttl %v, want between %v and %v", demo.ErrUsage, *ttl, minTTL, maxTTL)
		}
		logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
		_, err := Run(ctx, Config{Etcd: *etcd, TTL: *ttl, Executable: exe, Out: os.Stdout, Logger: logger})
		return err
	})
}

// Bounds of -ttl: shorter leases renew too often for a shared machine,
// longer ones make the demo wait.
const (
	minTTL = 300 * time.Millisecond
	maxTTL = 10 * time.Second
)
