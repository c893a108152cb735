package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/internal/etcdflag"
	"github.com/converge-go/converge/internal/ctxtime"
	"github.com/converge-go/converge/store/etcdstore/etcdprocs"
)

// runsEnv sets how many exclusivity runs TestExclusivityAcrossProcesses
// makes (default: one of each fault).
const runsEnv = "CONVERGE_SHARDED_RUNS"

// faults are the exclusivity runs' faults, taken in turn.
var faults = []string{"kill", "stop", "etcd-leader"}

// TestExclusivityAcrossProcesses runs three replica processes in churn
// mode (every reconcile writes and requeues its key) and injects a fault:
// a replica SIGKILLed and restarted, a replica stopped (SIGSTOP) until
// its buckets have been taken over, then resumed, or the leader of a
// 3-member cluster of etcd processes killed and restarted. Then it checks
// every record of the run: no key reconciled by two replicas at once (a
// frozen replica's reconcile is counted apart), and no write accepted from
// a replica that did not own the key's bucket at the write's revision, at
// the epoch it claimed, as etcd's history of the owner records shows.
func TestExclusivityAcrossProcesses(t *testing.T) {
	n := len(faults)
	if s := os.Getenv(runsEnv); s != "" {
		var err error
		n, err = strconv.Atoi(s)
		require.NoError(t, err, runsEnv)
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	var cluster *etcdprocs.Cluster
	totals := map[string]verdict{}
	for i := range n {
		fault := faults[i%len(faults)]
		var flags etcdflag.Flags
		if fault == "etcd-leader" {
			if cluster == nil {
				cluster = startCluster(t)
			}
			flags.Endpoints = strings.Join(cluster.Endpoints(), ",")
		}
		t.Run(fmt.Sprintf("%02d-%s", i, fault), func(t *testing.T) {
			v := exclusivityRun(t, exe, fault, flags, cluster)
			tot := totals[fault]
			tot.Reconciles += v.Reconciles
			tot.Writes += v.Writes
			tot.Refused += v.Refused
			tot.FrozenOverlaps += v.FrozenOverlaps
			totals[fault] = tot
		})
	}
	for fault, v := range totals {
		t.Logf("%s: %v", fault, v)
	}
}

// startCluster builds etcd and starts a 3-member cluster of processes.
func startCluster(t *testing.T) *etcdprocs.Cluster {
	t.Helper()
	bin, err := etcdprocs.Build(t.TempDir())
	require.NoError(t, err)
	c, err := etcdprocs.Start(t.Context(), bin, t.TempDir(), 3, 30*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			for name, log := range c.Logs(2000) {
				t.Logf("etcd %s:\n%s", name, log)
			}
		}
		c.Stop()
	})
	return c
}

func exclusivityRun(t *testing.T, exe, fault string, flags etcdflag.Flags, cluster *etcdprocs.Cluster) verdict {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // hang guard only
	defer cancel()
	const ttl = time.Second
	cfg := Config{
		Etcd: flags, Executable: exe,
		Keys: 200, Buckets: 32, Workers: 2, TTL: ttl, IO: 5 * time.Millisecond, Churn: true,
	}.withDefaults()
	s, err := openSession(ctx, cfg)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.close(ctx)) }()
	ids := []string{"replica-1", "replica-2", "replica-3"}
	for _, id := range ids {
		require.NoError(t, s.fleet.start(id))
	}
	_, err = s.waitBalanced(ctx, "the buckets to spread", ids)
	require.NoError(t, err)
	// Let the churn run a random while, so that the fault lands anywhere
	// in a reconcile.
	require.NoError(t, ctxtime.Sleep(ctx, time.Duration(100+rand.IntN(400))*time.Millisecond))

	victim := ids[rand.IntN(len(ids))]
	var rest []string
	for _, id := range ids {
		if id != victim {
			rest = append(rest, id)
		}
	}
	switch fault {
	case "kill":
		require.NoError(t, s.fleet.kill(victim))
		_, err = s.waitBalanced(ctx, "the takeover of "+victim+"'s buckets", rest)
		require.NoError(t, err)
		require.NoError(t, s.fleet.start(victim))
	case "stop":
		require.NoError(t, s.fleet.freeze(victim))
		_, err = s.waitBalanced(ctx, "the takeover of "+victim+"'s buckets", rest)
		require.NoError(t, err)
		require.NoError(t, s.fleet.thaw(victim))
	case "etcd-leader":
		leader, err := cluster.Leader(ctx, 10*time.Second)
		require.NoError(t, err)
		require.NoError(t, cluster.Kill(leader))
		require.NoError(t, ctxtime.Sleep(ctx, time.Duration(200+rand.IntN(1300))*time.Millisecond))
		require.NoError(t, cluster.Start(leader))
		require.NoError(t, cluster.WaitServing(ctx, 30*time.Second, cluster.Endpoints(leader)...))
	}
	_, err = s.waitBalanced(ctx, "every replica to own its share again", ids)
	require.NoError(t, err)
	require.NoError(t, s.waitWrites(ctx, "writes under the new owners", ids, 20))

	v, err := s.verdict(ctx)
	require.NoError(t, err)
	t.Logf("%s of %s: %v", fault, victim, v)
	require.Empty(t, v.Overlaps, "keys reconciled by two replicas at once")
	require.Empty(t, v.Unfenced, "writes accepted from a replica that did not own the bucket")
	require.Empty(t, v.Unended, "reconciles without an end")
	require.Positive(t, v.Writes)
	return v
}
