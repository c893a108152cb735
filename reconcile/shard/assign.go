package shard

import (
	"cmp"
	"slices"
)

// assign computes the owner of every bucket from the current ones, moving
// as few buckets as possible: prev[b] is the index (among n live members)
// of bucket b's current owner, or -1 when it has none (or a dead one); the
// result maps every bucket to a member (all -1 when n is 0).
//
// Balance is exact: every member gets floor(B/n) or ceil(B/n) buckets
// (B = len(prev)), the ceilings going to the members that hold the most
// now. Stickiness: a member keeps its current buckets up to its quota (the
// lowest-numbered ones), and only the rest, with the ownerless buckets,
// move, to the members below their quota. Going from n to n+1 members
// therefore moves floor(B/(n+1)) buckets or a few more (the ones the old
// members trade when their quotas shift by one); losing a member moves
// only its buckets (and as few more).
func assign(prev []int32, n int) []int32 {
	target := make([]int32, len(prev))
	if n <= 0 {
		for b := range target {
			target[b] = -1
		}
		return target
	}
	count := make([]int, n)
	for _, m := range prev {
		if m >= 0 && int(m) < n {
			count[m]++
		}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(count[b], count[a]) })
	quota := make([]int, n)
	base, extra := len(prev)/n, len(prev)%n
	for rank, m := range order {
		quota[m] = base
		if rank < extra {
			quota[m]++
		}
	}
	kept := make([]int, n)
	var pool []int
	for b, m := range prev {
		if m >= 0 && int(m) < n && kept[m] < quota[m] {
			target[b] = m
			kept[m]++
			continue
		}
		pool = append(pool, b)
	}
	m := 0
	for _, b := range pool {
		for kept[m] >= quota[m] {
			m++
		}
		target[b] = int32(m)
		kept[m]++
	}
	return target
}
