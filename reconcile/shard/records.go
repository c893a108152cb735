package shard

import "strconv"

// The records a deployment keeps under Options.Prefix (P):
//
//	P + "members/" + id   lock.Record: replica id's membership lease
//	P + "assigner"        lock.Record: the assigner's election lease
//	P + "plan"            planRecord: the target owner of every bucket
//	P + "owner/" + n      ownerRecord: bucket n's owner; its revision is
//	                      the bucket's fencing epoch
//
// Who writes what: each replica creates and renews its own member record
// (and deletes it when it leaves); the assigner deletes the member records
// it has seen unchanged for a TTL, writes the plan, and writes the owner
// record of a bucket that has none or whose owner is no longer a member;
// an owner hands a bucket over by rewriting its owner record to the
// planned owner, guarded by its own membership. Every write of the
// assigner is guarded by its election lease.

// ownerRecord names a bucket's owner: a replica's membership term.
type ownerRecord struct {
	// Owner is the owning replica's ID.
	Owner string `json:"owner"`
	// Term is the owner's membership token (its member record's
	// CreateRevision): a restarted replica is a new term and owns nothing
	// of its previous one's.
	Term int64 `json:"term"`
	// Moves counts the bucket's changes of owner, for people.
	Moves int64 `json:"moves"`
	// Assigned is set when the assigner wrote the record (the bucket had
	// no owner, or a dead one), clear when the previous owner handed the
	// bucket over.
	Assigned bool `json:"assigned,omitempty"`
}

// member is one membership term in a plan.
type member struct {
	ID   string `json:"id"`
	Term int64  `json:"term"`
}

// planRecord is the assigner's decision: the target owner of every bucket.
type planRecord struct {
	// Members are the live members when the plan was made, sorted by ID.
	Members []member `json:"members"`
	// Owners[b] indexes Members: bucket b's target owner (-1: none).
	Owners []int32 `json:"owners"`
}

// target returns the target owner of bucket b (ok false: none).
func (p *planRecord) target(b int) (member, bool) {
	if p == nil || b >= len(p.Owners) || p.Owners[b] < 0 || int(p.Owners[b]) >= len(p.Members) {
		return member{}, false
	}
	return p.Members[p.Owners[b]], true
}

// keys of the records under prefix.
type keys struct{ prefix string }

func (k keys) members() string            { return k.prefix + "members/" }
func (k keys) member(id string) string    { return k.prefix + "members/" + id }
func (k keys) assigner() string           { return k.prefix + "assigner" }
func (k keys) plan() string               { return k.prefix + "plan" }
func (k keys) owners() string             { return k.prefix + "owner/" }
func (k keys) owner(b int) string         { return k.prefix + "owner/" + strconv.Itoa(b) }
func (k keys) memberID(key string) string { return key[len(k.members()):] }

// ownerBucket returns the bucket of an owner record's key (ok false: not
// one, or out of range).
func (k keys) ownerBucket(key string, buckets int) (int, bool) {
	if len(key) <= len(k.owners()) || key[:len(k.owners())] != k.owners() {
		return 0, false
	}
	b, err := strconv.Atoi(key[len(k.owners()):])
	if err != nil || b < 0 || b >= buckets {
		return 0, false
	}
	return b, true
}
