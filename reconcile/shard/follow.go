package shard

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/store"
)

// handoverConcurrency bounds the handover writes in flight at once.
const handoverConcurrency = 16

// handover is a due write naming bucket b's planned owner.
type handover struct {
	b     int
	epoch int64
	to    member
	moves int64
}

// follow keeps this replica's ownership in step with the owner records and
// the plan until ctx ends.
func (r *Replica) follow(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		r.mu.Lock()
		wake := r.wake
		r.mu.Unlock()
		ow, pw := r.ownerM.changed(), r.planM.changed()
		gained, rev, due, next := r.step(time.Now())
		r.notify(gained, rev)
		r.handOver(ctx, due)
		timer.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-ow:
		case <-pw:
		case <-timer.C:
		}
	}
}

// step brings every bucket's state in line with the records as mirrored:
// it ends ownerships the records no longer grant, takes the ones they do,
// starts handing over the buckets the plan gives to others, and returns
// the buckets taken (with their highest epoch), the handover writes due,
// and how long until the next one is.
func (r *Replica) step(now time.Time) (gained []int, rev int64, due []handover, next time.Duration) {
	next = time.Hour
	owners, plan := r.mirrored()
	r.mu.Lock()
	defer r.mu.Unlock()
	var me member
	if r.term != nil && r.term.Context().Err() == nil {
		me = member{ID: r.opts.ID, Term: r.term.Token()}
	}
	before := r.owned
	for b := range r.buckets {
		st := &r.buckets[b]
		rec, ok := owners[r.keys.owner(b)]
		mine := ok && me.Term != 0 && rec.Value.Owner == me.ID && rec.Value.Term == me.Term
		if st.owned && (!mine || rec.Revision != st.epoch) {
			r.loseLocked(b)
		}
		tgt, planned := plan.target(b)
		switch {
		case !planned || tgt != me:
			st.planSeen = time.Time{}
		case st.planSeen.IsZero():
			st.planSeen = now
		}
		if mine && (!st.owned || st.releasing && planned && tgt == me) {
			r.takeLocked(b, rec, now)
			gained = append(gained, b)
			rev = max(rev, rec.Revision)
		}
		if !st.owned {
			continue
		}
		if !st.releasing && planned && tgt != me {
			// Stop taking reconciles of b and cancel those in flight;
			// name the new owner once they have had Drain to return.
			st.releasing = true
			st.releaseAt = now.Add(r.opts.Drain)
			st.cancel()
		}
		if !st.releasing || st.writing {
			continue
		}
		if wait := st.releaseAt.Sub(now); wait > 0 {
			next = min(next, wait)
			continue
		}
		if planned && tgt != me {
			st.writing = true
			due = append(due, handover{b: b, epoch: st.epoch, to: tgt, moves: rec.Value.Moves})
		}
	}
	if r.owned != before || len(gained) > 0 {
		r.reportLocked()
	}
	return gained, rev, due, next
}

// takeLocked makes this replica bucket b's owner at rec's epoch.
func (r *Replica) takeLocked(b int, rec store.Object[ownerRecord], now time.Time) {
	st := &r.buckets[b]
	retake := st.owned // it was being handed over, and the plan went back
	if retake {
		st.cancel()
		r.owned--
	}
	ctx, cancel := context.WithCancel(r.term.Context())
	*st = bucket{owned: true, epoch: rec.Revision, ctx: ctx, cancel: cancel, planSeen: st.planSeen}
	r.owned++
	if retake {
		return
	}
	kind := "planned"
	switch {
	case rec.Value.Assigned && rec.Value.Moves == 0:
		kind = "initial"
	case rec.Value.Assigned:
		kind = "takeover"
	}
	// The owner record may arrive before the plan (they come by two
	// watches): then the plan is seen now.
	var d time.Duration
	if !st.planSeen.IsZero() {
		d = now.Sub(st.planSeen)
	}
	r.opts.Metrics.Handover(r.opts.ID, kind, d)
}

// handOver writes the due handovers, a few at a time, each guarded by this
// replica's membership term and conditioned on the bucket's epoch. A
// failed write is retried after a while (a conflict means someone else
// rewrote the record: the next step ends the ownership).
func (r *Replica) handOver(ctx context.Context, due []handover) {
	if len(due) == 0 {
		return
	}
	r.mu.Lock()
	term := r.term
	r.mu.Unlock()
	var g errgroup.Group
	g.SetLimit(handoverConcurrency)
	for _, h := range due {
		g.Go(func() error {
			err := r.write(ctx, term, h)
			r.mu.Lock()
			defer r.mu.Unlock()
			st := &r.buckets[h.b]
			if st.owned && st.epoch == h.epoch {
				st.writing = false
				st.releaseAt = time.Now().Add(r.retry())
			}
			if err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrGuardFailed) {
				r.opts.Logger.Warn("handover write failed; retrying", "bucket", h.b, "to", h.to.ID, "err", err)
			}
			return nil
		})
	}
	_ = g.Wait()
}

// write names h.to the owner of bucket h.b.
func (r *Replica) write(ctx context.Context, term lock.Lock, h handover) error {
	if term == nil {
		return store.ErrGuardFailed
	}
	wctx, cancel := context.WithTimeout(ctx, r.opts.TTL/2)
	defer cancel()
	_, err := r.owners.Update(wctx, r.keys.owner(h.b), ownerRecord{Owner: h.to.ID, Term: h.to.Term, Moves: h.moves + 1}, h.epoch, term.Guard())
	if err == nil {
		r.opts.Logger.Debug("bucket handed over", "bucket", h.b, "to", h.to.ID)
	}
	return err
}
