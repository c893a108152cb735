package shard

import (
	"time"

	"github.com/converge-go/converge/store"
)

// Status is what a Replica knows of the deployment, for a debug page and
// health checks. It reflects this replica's copy of the records, which may
// lag the store by a watch event.
type Status struct {
	// ID is this replica's ID.
	ID string
	// Member reports whether this replica holds its membership lease, and
	// Term its token.
	Member bool
	Term   int64
	// Assigner reports whether this replica is the assigner now.
	Assigner bool
	// Owned is how many buckets this replica owns (releasing ones
	// included until they are handed over).
	Owned int
	// Members are the members of the latest plan.
	Members []string
	// Ownerless lists the buckets no replica is working on: no owner
	// record, or one naming a membership term that is gone or has not
	// been renewed within its renew deadline (TTL*2/3: its holder has
	// stopped by then). It stays empty in a healthy deployment except
	// during a crash takeover (see the package doc).
	Ownerless []int
	// Buckets describes every bucket.
	Buckets []BucketStatus
}

// BucketStatus describes one bucket.
type BucketStatus struct {
	Bucket int
	// Owner is the owner record's replica ("" without a record), Epoch its
	// revision (the fencing epoch), Moves how many times it changed owner.
	Owner string
	Epoch int64
	Moves int64
	// Target is the owner the latest plan gives the bucket.
	Target string
	// Mine reports that this replica owns it, Releasing that it is
	// handing it over to Target.
	Mine      bool
	Releasing bool
}

// Status returns a snapshot of what this replica knows.
func (r *Replica) Status() Status {
	if r == nil || r.buckets == nil {
		return Status{}
	}
	owners, plan := r.mirrored()
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Status{ID: r.opts.ID, Assigner: r.assigning, Owned: r.owned, Buckets: make([]BucketStatus, len(r.buckets))}
	if r.term != nil {
		s.Member, s.Term = true, r.term.Token()
	}
	if plan != nil {
		for _, m := range plan.Members {
			s.Members = append(s.Members, m.ID)
		}
	}
	for b := range r.buckets {
		bs := BucketStatus{Bucket: b, Mine: r.buckets[b].owned, Releasing: r.buckets[b].releasing}
		o, ok := owners[r.keys.owner(b)]
		if ok {
			bs.Owner, bs.Epoch, bs.Moves = o.Value.Owner, o.Revision, o.Value.Moves
		}
		if t, ok := plan.target(b); ok {
			bs.Target = t.ID
		}
		if r.ownerless(owners, b, now) {
			s.Ownerless = append(s.Ownerless, b)
		}
		s.Buckets[b] = bs
	}
	return s
}

// Ownerless returns Status().Ownerless without building the rest of the
// Status: the buckets no replica is working on, in increasing order, as
// this replica's copy of the records shows them (every bucket before its
// first list of the owner records). It makes a controller given this
// Replica as reconcile.Options.Shard name them in its Health.
func (r *Replica) Ownerless() []int {
	if r == nil || r.buckets == nil {
		return nil
	}
	owners, _ := r.mirrored()
	now := time.Now()
	var out []int
	for b := range r.buckets {
		if r.ownerless(owners, b, now) {
			out = append(out, b)
		}
	}
	return out
}

// ownerless reports whether bucket b has no owner record among owners, or
// one whose owner is not working (see working).
func (r *Replica) ownerless(owners map[string]store.Object[ownerRecord], b int, now time.Time) bool {
	o, ok := owners[r.keys.owner(b)]
	return !ok || !r.working(o.Value, now)
}

// working reports whether o's owner is, as far as this replica's copy of
// the member records shows, still a member within its renew deadline.
func (r *Replica) working(o ownerRecord, now time.Time) bool {
	key := r.keys.member(o.Owner)
	m, ok := r.memberM.get(key)
	if !ok || m.CreateRevision != o.Term {
		return false
	}
	return now.Sub(r.memberM.since(key)) <= max(r.opts.TTL, m.Value.TTL)*2/3
}

// RecordPrefix returns Options.Prefix: where this replica's records live
// in the keyspace it shares with the controller's objects
// (reconcile.Sharder.RecordPrefix; a controller whose Prefix covers it is
// refused).
func (r *Replica) RecordPrefix() string { return r.opts.Prefix }
