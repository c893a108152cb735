package shard

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"
)

// counts returns how many buckets each of n members holds in target.
func counts(target []int32, n int) []int {
	c := make([]int, n)
	for _, m := range target {
		if m >= 0 {
			c[m]++
		}
	}
	return c
}

// moved counts the buckets whose owner differs between a and b, where b's
// member i is a's member i (members are appended, never renumbered, in
// these tests) and removed is the index dropped from a (-1: none).
func moved(a, b []int32, removed int32) int {
	n := 0
	for i := range a {
		was := a[i]
		switch {
		case removed >= 0 && was == removed:
			was = -1 // lost with its member: its move is counted
		case removed >= 0 && was > removed:
			was--
		}
		if was != b[i] {
			n++
		}
	}
	return n
}

// TestAssignmentIsBalancedAndMovesFewBucketsOnJoin: for 1..64 members
// over 1,024 buckets, every member holds floor or ceil of B/N buckets (the
// busiest within 1.05× the mean wherever whole buckets allow it, and at
// 4,096 buckets always), and a join moves at most 1.1 × B/(N+1) buckets.
func TestAssignmentIsBalancedAndMovesFewBucketsOnJoin(t *testing.T) {
	for _, B := range []int{1024, 4096} {
		prev := assign(make([]int32, B), 0)
		worstRatio, worstMoves := 0.0, 0.0
		for n := 1; n <= 64; n++ {
			next := assign(prev, n)
			c := counts(next, n)
			lo, hi := B/n, (B+n-1)/n
			mean := float64(B) / float64(n)
			busiest := 0
			for i, k := range c {
				if k < lo || k > hi {
					t.Fatalf("B=%d N=%d: member %d holds %d buckets, outside [%d, %d]", B, n, i, k, lo, hi)
				}
				busiest = max(busiest, k)
			}
			ratio := float64(busiest) / mean
			if ratio > 1.05 && float64(hi) <= 1.05*mean {
				t.Errorf("B=%d N=%d: busiest %d > 1.05 × mean %.2f", B, n, busiest, mean)
			}
			if ratio > 1.05 {
				t.Logf("B=%d N=%d: busiest %d = %.4f × mean %.2f: no split of %d whole buckets does better", B, n, busiest, ratio, mean, B)
			}
			if B == 4096 && ratio > 1.05 {
				t.Errorf("B=4096 N=%d: busiest %.4f × mean", n, ratio)
			}
			worstRatio = max(worstRatio, ratio)
			if n > 1 {
				m := moved(prev, next, -1)
				bound := 1.1 * float64(B) / float64(n)
				if float64(m) > bound {
					t.Errorf("B=%d N=%d→%d: %d buckets moved > 1.1 × B/(N+1) = %.1f", B, n-1, n, m, bound)
				}
				worstMoves = max(worstMoves, float64(m)/(float64(B)/float64(n)))
			}
			if again := assign(next, n); moved(next, again, -1) != 0 {
				t.Fatalf("B=%d N=%d: the plan is not a fixed point: recomputing it moves buckets", B, n)
			}
			prev = next
		}
		t.Logf("B=%d, N=1..64: busiest/mean ≤ %.4f; moves on a join ≤ %.3f × B/(N+1)", B, worstRatio, worstMoves)
	}
}

// TestAssignmentMovesOnlyTheLostMembersBucketsOnLeave: when a member of
// N leaves, its buckets move and at most a few more (quotas shifting by
// one), never more than B/N + N.
func TestAssignmentMovesOnlyTheLostMembersBucketsOnLeave(t *testing.T) {
	const B = 1024
	for n := 2; n <= 64; n++ {
		full := assign(assign(make([]int32, B), 0), n)
		for _, gone := range []int32{0, int32(n / 2), int32(n - 1)} {
			prev := make([]int32, B)
			held := 0
			for b, m := range full {
				switch {
				case m == gone:
					prev[b] = -1
					held++
				case m > gone:
					prev[b] = m - 1
				default:
					prev[b] = m
				}
			}
			next := assign(prev, n-1)
			m := moved(full, next, gone)
			if m < held || m > held+n {
				t.Errorf("N=%d→%d (member %d left with %d buckets): %d buckets moved", n, n-1, gone, held, m)
			}
		}
	}
}

// TestAssignmentSimulationAtScale (CONVERGE_SHARD_SIM=1): 1,000 replicas
// joining one by one, then 10 dying, over 16,384 buckets and 1M keys hashed
// to buckets: balance in buckets and in keys, and buckets/keys moved (each
// moved bucket is one handover).
func TestAssignmentSimulationAtScale(t *testing.T) {
	if os.Getenv("CONVERGE_SHARD_SIM") == "" {
		t.Skip("set CONVERGE_SHARD_SIM=1 to run the 1,000-replica, 1M-key simulation")
	}
	B, N, K := 16384, 1000, 1_000_000
	if v, err := strconv.Atoi(os.Getenv("CONVERGE_SHARD_SIM_BUCKETS")); err == nil && v > 0 {
		B = v
	}
	keysIn := make([]int, B)
	for i := range K {
		keysIn[Bucket(fmt.Sprintf("items/%08d", i), B)]++
	}
	plan := assign(make([]int32, B), 0)
	totalMoves, totalKeys, worstJoin := 0, 0, 0.0
	for n := 1; n <= N; n++ {
		next := assign(plan, n)
		m := 0
		for b := range next {
			if plan[b] != next[b] {
				m++
				totalKeys += keysIn[b]
			}
		}
		if n > 1 {
			totalMoves += m
			worstJoin = max(worstJoin, float64(m)/(float64(B)/float64(n)))
		}
		plan = next
	}
	report := func(label string, plan []int32, n int) {
		c := counts(plan, n)
		k := make([]int, n)
		for b, m := range plan {
			k[m] += keysIn[b]
		}
		bmax, kmax, kmin := 0, 0, math.MaxInt
		for i := range c {
			bmax, kmax, kmin = max(bmax, c[i]), max(kmax, k[i]), min(kmin, k[i])
		}
		t.Logf("%s: %d replicas, %d buckets, %d keys: busiest %d buckets = %.3f × mean %.2f; keys per replica %d..%d, busiest %.3f × mean %.0f",
			label, n, B, K, bmax, float64(bmax)/(float64(B)/float64(n)), float64(B)/float64(n), kmin, kmax, float64(kmax)/(float64(K)/float64(n)), float64(K)/float64(n))
	}
	report("after 1,000 joins", plan, N)
	t.Logf("joins 1→1,000: %d handovers (buckets moved) in all, %d keys moved; worst join moved %.3f × B/(N+1)", totalMoves, totalKeys, worstJoin)
	// Ten replicas die: their buckets go to the others.
	prev := make([]int32, B)
	lost := 0
	for b, m := range plan {
		switch {
		case m < 10:
			prev[b] = -1
			lost++
		default:
			prev[b] = m - 10
		}
	}
	next := assign(prev, N-10)
	m := 0
	for b := range next {
		if prev[b] != next[b] {
			m++
		}
	}
	t.Logf("10 of 1,000 die holding %d buckets: %d handovers", lost, m)
	report("after 10 deaths", next, N-10)
}
