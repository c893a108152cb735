package debugpage

import (
	"maps"
	"slices"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/shard"
)

// ShardStatus is what the page reads of a controller's Sharder (its
// Controller.Sharder()) to show the controller's shard section:
// reconcile/shard's Replica has it.
type ShardStatus interface {
	Status() shard.Status
}

// Bucket states, as the page and its JSON name them. A bucket is in the
// first that applies.
const (
	// BucketOwnerless: no replica works on the bucket (shard.Status.Ownerless).
	BucketOwnerless = "ownerless"
	// BucketReleasing: this replica is handing the bucket over to its target.
	BucketReleasing = "releasing"
	// BucketMine: this replica owns the bucket.
	BucketMine = "mine"
	// BucketMoving: another replica owns it and the plan gives it to a
	// third (or to this one, which has not taken it yet).
	BucketMoving = "moving"
	// BucketOwned: another replica owns it, as the plan says.
	BucketOwned = "owned"
)

// bucketStates are the bucket states in the order the page counts them.
var bucketStates = []string{BucketOwnerless, BucketReleasing, BucketMine, BucketMoving, BucketOwned}

// openBuckets is the largest bucket count whose table the page shows
// unfolded; a larger one is folded under its summary.
const openBuckets = 64

// shardView is a controller's shard section: this replica, the members,
// the ownerless buckets and every bucket's owner, epoch and moves.
type shardView struct {
	Replica  string `json:"replica"`
	Member   bool   `json:"member"`
	Term     int64  `json:"term,omitempty"`
	Assigner bool   `json:"assigner"`
	// Owned is how many buckets this replica owns, of Count.
	Owned int `json:"owned"`
	Count int `json:"count"`
	// Members are the plan's members and every other replica named as
	// an owner, with how many buckets each owns.
	Members   []memberView   `json:"members"`
	Ownerless []int          `json:"ownerless"`
	States    map[string]int `json:"states"`
	Buckets   []bucketView   `json:"buckets"`
	// For the template (not encoded).
	StateCounts []choice `json:"-"`
	Open        bool     `json:"-"`
}

type memberView struct {
	ID string `json:"id"`
	// Buckets counts the owner records naming it.
	Buckets int `json:"buckets"`
	// InPlan reports that the latest plan names it a member.
	InPlan bool `json:"inPlan"`
	// Self reports that it is this replica.
	Self bool `json:"self,omitempty"`
}

type bucketView struct {
	Bucket int    `json:"bucket"`
	Owner  string `json:"owner,omitempty"`
	Epoch  int64  `json:"epoch,omitempty"`
	Moves  int64  `json:"moves"`
	Target string `json:"target,omitempty"`
	State  string `json:"state"`
}

// shardOf returns c's shard section, nil if c has no Sharder with a
// Status.
func shardOf(c Controller) *shardView {
	sc, ok := c.(interface{ Sharder() reconcile.Sharder })
	if !ok {
		return nil
	}
	ss, ok := sc.Sharder().(ShardStatus)
	if !ok {
		return nil
	}
	st := ss.Status()
	v := &shardView{
		Replica: st.ID, Member: st.Member, Term: st.Term, Assigner: st.Assigner, Owned: st.Owned,
		Count: len(st.Buckets), Ownerless: st.Ownerless, States: map[string]int{},
		Buckets: make([]bucketView, len(st.Buckets)), Open: len(st.Buckets) <= openBuckets,
	}
	if v.Ownerless == nil {
		v.Ownerless = []int{}
	}
	members := map[string]*memberView{}
	member := func(id string) *memberView {
		m, ok := members[id]
		if !ok {
			m = &memberView{ID: id, Self: id == st.ID}
			members[id] = m
		}
		return m
	}
	for _, id := range st.Members {
		member(id).InPlan = true
	}
	ownerless := map[int]bool{}
	for _, b := range st.Ownerless {
		ownerless[b] = true
	}
	for i, b := range st.Buckets {
		bv := bucketView{Bucket: b.Bucket, Owner: b.Owner, Epoch: b.Epoch, Moves: b.Moves, Target: b.Target,
			State: bucketState(b, ownerless[b.Bucket])}
		if b.Owner != "" {
			member(b.Owner).Buckets++
		}
		v.States[bv.State]++
		v.Buckets[i] = bv
	}
	for _, id := range slices.Sorted(maps.Keys(members)) {
		v.Members = append(v.Members, *members[id])
	}
	for _, s := range bucketStates {
		if n := v.States[s]; n > 0 {
			v.StateCounts = append(v.StateCounts, choice{Name: s, Count: n})
		}
	}
	return v
}

// bucketState names b's state (see the Bucket constants).
func bucketState(b shard.BucketStatus, ownerless bool) string {
	switch {
	case ownerless:
		return BucketOwnerless
	case b.Releasing:
		return BucketReleasing
	case b.Mine:
		return BucketMine
	case b.Target != "" && b.Target != b.Owner:
		return BucketMoving
	}
	return BucketOwned
}
