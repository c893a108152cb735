package shard

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/store"
)

// written holds the assigner's own writes until its mirrors show them, so
// that a round following another before the watch events arrive neither
// repeats them nor conflicts with them.
type written struct {
	plan   store.Object[planRecord]
	owners map[string]store.Object[ownerRecord]
}

// assign runs while this replica is the assigner: it follows the member
// records, declares dead the ones it has seen unchanged for their TTL,
// keeps the plan balanced over the live members, and names an owner for
// every bucket that has none or a dead one. Every write carries the
// election lease's guard, so a deposed assigner writes nothing.
func (r *Replica) assign(ctx context.Context) error {
	lk, ok := lock.FromContext(ctx)
	if !ok {
		return nil
	}
	r.setAssigning(true)
	defer r.setAssigning(false)
	mm := r.memberM
	w := &written{owners: map[string]store.Object[ownerRecord]{}}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		mw, ow, pw := mm.changed(), r.ownerM.changed(), r.planM.changed()
		next := r.assignOnce(ctx, lk.Guard(), mm, w)
		timer.Reset(next)
		select {
		case <-ctx.Done():
			return nil
		case <-mw:
		case <-ow:
		case <-pw:
		case <-timer.C:
		}
	}
}

func (r *Replica) setAssigning(on bool) {
	r.mu.Lock()
	r.assigning = on
	r.mu.Unlock()
}

// assignOnce makes one round of the assigner's work from the mirrored
// records and returns how long until the next round is due without a
// change (a member's TTL running out, or a retry after a failure).
func (r *Replica) assignOnce(ctx context.Context, guard store.Guard, mm *mirror[lock.Record], w *written) time.Duration {
	members, ok1 := mm.snapshot()
	owners, ok2 := r.ownerM.snapshot()
	_, ok3 := r.planM.snapshot()
	if !ok1 || !ok2 || !ok3 {
		return r.retry()
	}
	live, next := r.judgeMembers(ctx, guard, mm, members)
	index := indexMembers(live)
	pobj, hasPlan := r.latestPlan(w)
	w.overlay(owners)
	var plan *planRecord
	if hasPlan {
		plan = &pobj.Value
	}
	want := planRecord{Members: live, Owners: assign(r.stickyOwners(plan, owners, index), len(live))}
	if !hasPlan || !slices.Equal(plan.Members, want.Members) || !slices.Equal(plan.Owners, want.Owners) {
		if err := r.writePlan(ctx, guard, w, want, pobj, hasPlan); err != nil {
			r.opts.Logger.Debug("cannot write the plan; retrying", "err", err)
			return min(next, r.retry())
		}
		r.opts.Logger.Info("plan written", "members", len(live))
	}
	if len(live) == 0 {
		return next
	}
	if !r.nameOwners(ctx, guard, w, owners, index, live, want) {
		next = min(next, r.retry())
	}
	return next
}

// judgeMembers returns the live members, sorted by ID, and how long until
// the first of them would be judged dead. A member whose record has been
// seen unchanged for its TTL is dead: its record is deleted, which makes
// its writes fail (they carry its term's guard) and its buckets
// ownerless; a failed delete asks for a retry.
func (r *Replica) judgeMembers(ctx context.Context, guard store.Guard, mm *mirror[lock.Record], members map[string]store.Object[lock.Record]) ([]member, time.Duration) {
	now := time.Now()
	next := time.Hour
	live := make([]member, 0, len(members))
	for key, o := range members {
		// Every replica follows the member records, so that a new
		// assigner judges from when it first saw each revision, not
		// from when it took over (which would add a TTL after the
		// previous assigner's own crash).
		wait := max(r.opts.TTL, o.Value.TTL)
		if left := wait - now.Sub(mm.since(key)); left > 0 {
			next = min(next, left)
			live = append(live, member{ID: r.keys.memberID(key), Term: o.CreateRevision})
			continue
		}
		if _, err := r.members.Delete(ctx, key, o.Revision, guard); err != nil {
			r.opts.Logger.Warn("cannot delete a dead member's record", "member", key, "err", err)
			next = min(next, r.retry())
		} else {
			r.opts.Logger.Info("member declared dead", "member", r.keys.memberID(key))
		}
	}
	slices.SortFunc(live, func(a, b member) int { return strings.Compare(a.ID, b.ID) })
	return live, next
}

// indexMembers returns each live member's position in live.
func indexMembers(live []member) map[member]int32 {
	index := make(map[member]int32, len(live))
	for i, m := range live {
		index[m] = int32(i)
	}
	return index
}

// latestPlan returns the newer of the mirrored plan and the assigner's own
// last write of it, and whether there is one.
func (r *Replica) latestPlan(w *written) (store.Object[planRecord], bool) {
	pobj, hasPlan := r.planM.get(r.keys.plan())
	if w.plan.Revision > pobj.Revision {
		pobj, hasPlan = w.plan, true
	}
	return pobj, hasPlan
}

// overlay puts into owners the assigner's owner writes that the mirror
// does not show yet, and forgets those it has caught up with.
func (w *written) overlay(owners map[string]store.Object[ownerRecord]) {
	for key, o := range w.owners {
		if m, ok := owners[key]; ok && m.Revision >= o.Revision {
			delete(w.owners, key) // the mirror has caught up
			continue
		}
		owners[key] = o
	}
}

// stickyOwners returns, per bucket, the position in index of the member
// the bucket should stay with: the last plan's target where it is alive,
// else the current owner where it is, else -1.
func (r *Replica) stickyOwners(plan *planRecord, owners map[string]store.Object[ownerRecord], index map[member]int32) []int32 {
	prev := make([]int32, r.opts.Buckets)
	for b := range prev {
		prev[b] = -1
		if t, ok := plan.target(b); ok {
			if i, ok := index[t]; ok {
				prev[b] = i
				continue
			}
		}
		if o, ok := owners[r.keys.owner(b)]; ok {
			if i, ok := index[member{ID: o.Value.Owner, Term: o.Value.Term}]; ok {
				prev[b] = i
			}
		}
	}
	return prev
}

// writePlan writes want over the plan pobj (created if there is none) and
// records the write in w.
func (r *Replica) writePlan(ctx context.Context, guard store.Guard, w *written, want planRecord, pobj store.Object[planRecord], hasPlan bool) error {
	var err error
	var obj store.Object[planRecord]
	if hasPlan {
		obj, err = r.plans.Update(ctx, r.keys.plan(), want, pobj.Revision, guard)
	} else {
		obj, err = r.plans.Create(ctx, r.keys.plan(), want, guard)
	}
	if err == nil {
		w.plan = obj
	}
	return err
}

// nameOwners names the planned owner of every bucket without a live one,
// handoverConcurrency writes at a time, records the writes in w, and
// reports whether every write succeeded.
func (r *Replica) nameOwners(ctx context.Context, guard store.Guard, w *written, owners map[string]store.Object[ownerRecord], index map[member]int32, live []member, want planRecord) bool {
	var g errgroup.Group
	g.SetLimit(handoverConcurrency)
	failed := make(chan struct{}, 1)
	var mu sync.Mutex
	for b := range r.opts.Buckets {
		o, ok := owners[r.keys.owner(b)]
		if ok {
			if _, alive := index[member{ID: o.Value.Owner, Term: o.Value.Term}]; alive {
				continue
			}
		}
		to := live[want.Owners[b]]
		rec := ownerRecord{Owner: to.ID, Term: to.Term, Assigned: true}
		g.Go(func() error {
			var err error
			var obj store.Object[ownerRecord]
			if ok {
				rec.Moves = o.Value.Moves + 1
				obj, err = r.owners.Update(ctx, r.keys.owner(b), rec, o.Revision, guard)
			} else {
				obj, err = r.owners.Create(ctx, r.keys.owner(b), rec, guard)
			}
			if err == nil {
				mu.Lock()
				w.owners[obj.Key] = obj
				mu.Unlock()
			} else {
				select {
				case failed <- struct{}{}:
				default:
				}
			}
			return nil
		})
	}
	_ = g.Wait()
	select {
	case <-failed:
		return false
	default:
		return true
	}
}
