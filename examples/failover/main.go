// Command failover runs the ReplicaSet controller of the replicaset example
// as three replicas of one manager, elected through a lease on an embedded
// etcd, and narrates a failover: the leader converges the pods, crashes
// without releasing its lease, another replica takes over once the lease
// has gone unrenewed for a TTL and keeps converging, and a status write the
// crashed leader sent under its term, delayed in the network until after the
// takeover, is rejected by fencing.
//
// Run it from the repository root:
//
//	go run ./examples/failover
//	go run ./examples/failover -ttl 1s
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/converge-go/converge/examples/replicaset/replicaset"
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
	if os.Getenv(replicaset.PodEnv) == "1" {
		os.Exit(replicaset.RunPod(os.Args[1:]))
	}
	os.Exit(run())
}

// run parses the flags, runs the demo and returns the exit code.
func run() int {
	ttl := flag.Duration("ttl", DefaultTTL, "lease TTL: how long the survivors wait, with the lease unrenewed, before taking over")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: failover [flags]\n\n%s\n\nFlags:\n", description)
		flag.PrintDefaults()
	}
	flag.Parse()
	if *ttl < minTTL || *ttl > maxTTL || flag.NArg() > 0 {
		fmt.Fprintf(flag.CommandLine.Output(), "failover: -ttl must be between %v and %v\n\n", minTTL, maxTTL)
		flag.Usage()
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "failover:", err)
		return 1
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := Run(ctx, Config{TTL: *ttl, Executable: exe, Out: os.Stdout, Logger: logger}); err != nil {
		fmt.Fprintln(os.Stderr, "failover:", err)
		return 1
	}
	return 0
}

// Bounds of -ttl: shorter leases renew too often for a shared machine,
// longer ones make the demo wait.
const (
	minTTL = 300 * time.Millisecond
	maxTTL = 10 * time.Second
)
