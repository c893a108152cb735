package shard

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/converge-go/converge/internal/nilness"
	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
)

// Replica is one process's share of a sharded deployment: it keeps its
// membership, campaigns for the assigner's role, and owns the buckets the
// owner records name it. It implements reconcile.Sharder: give it to
// reconcile.Options.Shard. Run it (on every replica, not only a leader)
// for as long as the controllers that use it run.
type Replica struct {
	opts    Options
	keys    keys
	members *store.View[lock.Record]
	owners  *store.View[ownerRecord]
	plans   *store.View[planRecord]
	lease   *lock.Lease
	elector *lock.Elector
	ownerM  *mirror[ownerRecord]
	planM   *mirror[planRecord]
	memberM *mirror[lock.Record]

	mu        sync.Mutex
	running   bool
	term      lock.Lock // the membership term; nil while not a member
	buckets   []bucket
	owned     int
	assigning bool
	subs      map[*subscription]struct{}
	wake      chan struct{} // closed and replaced when term changes
}

var _ reconcile.Sharder = (*Replica)(nil)

// bucket is this replica's view of one bucket.
type bucket struct {
	owned     bool
	epoch     int64
	ctx       context.Context
	cancel    context.CancelFunc
	releasing bool      // handing over: Claim refuses, in-flight cancelled
	releaseAt time.Time // when the handover write is due
	writing   bool      // the handover write is in flight
	planSeen  time.Time // when the plan was first seen naming this replica
}

// New returns a Replica keeping its records in s under opts.Prefix. s must
// be the byte store (or a store sharing the keyspace, as every etcdstore
// of one client does) that holds the controller's objects, so that the
// guards Claim returns are checked by the store the reconciles write to:
// with the in-memory store or bolt, make the controller's store a
// store.NewView of the same byte store. It fails with ErrInvalid for a nil
// store or invalid options.
func New(s store.Store[[]byte], opts Options) (*Replica, error) {
	if nilness.Is(s) {
		return nil, fmt.Errorf("%w: nil store", ErrInvalid)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &Replica{
		opts:    opts,
		keys:    keys{prefix: opts.Prefix},
		members: store.NewView[lock.Record](s, nil),
		owners:  store.NewView[ownerRecord](s, nil),
		plans:   store.NewView[planRecord](s, nil),
		buckets: make([]bucket, opts.Buckets),
		subs:    map[*subscription]struct{}{},
		wake:    make(chan struct{}),
	}
	log := opts.Logger.With("replica", opts.ID)
	r.opts.Logger = log
	lopts := lock.LeaseOptions{Holder: opts.ID, TTL: opts.TTL, Logger: log}
	if r.lease, err = lock.NewLease(r.members, r.keys.member(opts.ID), lopts); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	al, err := lock.NewLease(r.members, r.keys.assigner(), lopts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if r.elector, err = lock.NewElector(al, lock.ElectorOptions{Logger: log, RetryDelay: r.retry()}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	r.ownerM = newMirror[ownerRecord](r.owners, r.keys.owners(), r.retry(), log)
	r.planM = newMirror[planRecord](r.plans, r.keys.plan(), r.retry(), log)
	r.memberM = newMirror[lock.Record](r.members, r.keys.members(), r.retry(), log)
	return r, nil
}

// retry is the wait after a failed store call.
func (r *Replica) retry() time.Duration { return max(r.opts.TTL/10, time.Millisecond) }

// Run keeps this replica's membership, campaigns for the assigner's role
// and follows the owner records until ctx ends; it is a manager.Runnable
// for every replica, not only a leader. When ctx ends it stops owning
// (every Claim context ends), waits Drain for in-flight reconciles, and
// deletes its member record so that the assigner gives its buckets to the
// others at once; if the store cannot be reached, they are taken over once
// the record has been seen unchanged for a TTL. It returns nil then, after
// every goroutine it started has returned. Run may be called again after
// it returns; calling it while it runs fails with ErrAlreadyRunning.
func (r *Replica) Run(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalid)
	}
	if r == nil || r.lease == nil {
		return fmt.Errorf("%w: Replica not made by New", ErrInvalid)
	}
	r.mu.Lock()
	if r.running {
		r.mu.Unlock()
		return ErrAlreadyRunning
	}
	r.running = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.running = false
		r.mu.Unlock()
	}()

	var wg sync.WaitGroup
	wg.Go(func() { r.ownerM.run(ctx) })
	wg.Go(func() { r.planM.run(ctx) })
	wg.Go(func() { r.memberM.run(ctx) })
	wg.Go(func() { _ = r.elector.Run(ctx, r.assign) })
	wg.Go(func() { r.follow(ctx) })
	r.membership(ctx)
	wg.Wait()
	return nil
}

// membership holds this replica's member lease, again after each loss,
// until ctx ends; then it leaves (see Run).
func (r *Replica) membership(ctx context.Context) {
	for {
		lk, err := r.lease.Acquire(ctx)
		if err != nil {
			return
		}
		r.setTerm(lk)
		select {
		case <-lk.Context().Done():
			r.setTerm(nil)
			continue
		case <-ctx.Done():
		}
		r.setTerm(nil)
		t := time.NewTimer(r.opts.Drain)
		<-t.C
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.TTL)
		if err := lk.Release(rctx); err != nil {
			r.opts.Logger.Warn("cannot delete the member record; others take over after the TTL", "err", err)
		}
		cancel()
		return
	}
}

// setTerm records the membership term (nil: none) and, when there is
// none, ends every ownership at once.
func (r *Replica) setTerm(lk lock.Lock) {
	r.mu.Lock()
	r.term = lk
	if lk == nil {
		for b := range r.buckets {
			r.loseLocked(b)
		}
		r.reportLocked()
	}
	close(r.wake)
	r.wake = make(chan struct{})
	r.mu.Unlock()
}

// loseLocked ends this replica's ownership of bucket b.
func (r *Replica) loseLocked(b int) {
	st := &r.buckets[b]
	if !st.owned {
		return
	}
	st.cancel()
	*st = bucket{planSeen: st.planSeen}
	r.owned--
}

// reportLocked reports the number of buckets owned.
func (r *Replica) reportLocked() {
	r.opts.Metrics.BucketsOwned(r.opts.ID, r.owned)
}

// Claim reports whether this replica owns key's bucket now and, if it does,
// returns the guards that prove it (the bucket's owner record at its
// epoch, and this replica's membership term) with a context that ends when
// the ownership does: the owner record is rewritten, the bucket is being
// handed over, or the membership is lost. It is safe for concurrent use.
func (r *Replica) Claim(key string) (reconcile.Claim, bool) {
	if r == nil || r.buckets == nil {
		return reconcile.Claim{}, false
	}
	b := Bucket(key, len(r.buckets))
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.buckets[b]
	if !st.owned || st.releasing || r.term == nil {
		return reconcile.Claim{}, false
	}
	return reconcile.Claim{
		Guards: []store.Guard{{Key: r.keys.owner(b), Revision: st.epoch}, r.term.Guard()},
		Owned:  st.ctx,
	}, true
}

// subscription is one Subscribe call.
type subscription struct {
	mu     sync.Mutex
	fn     func(owns func(key string) bool, revision int64)
	cancel bool
}

// Subscribe calls gained each time this replica takes buckets, with a
// function reporting whether a key is in one of them and the highest epoch
// among them, until the returned cancel is called; after cancel returns,
// gained is not called again (so gained must not call cancel). Calls are
// made one at a time, in the order the buckets were taken.
func (r *Replica) Subscribe(gained func(owns func(key string) bool, revision int64)) (cancel func()) {
	if r == nil || gained == nil || r.subs == nil {
		return func() {}
	}
	s := &subscription{fn: gained}
	r.mu.Lock()
	r.subs[s] = struct{}{}
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		delete(r.subs, s)
		r.mu.Unlock()
		s.mu.Lock()
		s.cancel = true
		s.mu.Unlock()
	}
}

// notify calls the subscribers for the buckets in gained.
func (r *Replica) notify(gained []int, revision int64) {
	if len(gained) == 0 {
		return
	}
	set := make(map[int]struct{}, len(gained))
	for _, b := range gained {
		set[b] = struct{}{}
	}
	n := len(r.buckets)
	owns := func(key string) bool { _, ok := set[Bucket(key, n)]; return ok }
	r.mu.Lock()
	subs := make([]*subscription, 0, len(r.subs))
	for s := range r.subs {
		subs = append(subs, s)
	}
	r.mu.Unlock()
	for _, s := range subs {
		s.mu.Lock()
		if !s.cancel {
			s.fn(owns, revision)
		}
		s.mu.Unlock()
	}
}

// mirrored returns this replica's copies of the owner records and of the
// plan (nil if none).
func (r *Replica) mirrored() (map[string]store.Object[ownerRecord], *planRecord) {
	owners, _ := r.ownerM.snapshot()
	if p, ok := r.planM.get(r.keys.plan()); ok {
		return owners, &p.Value
	}
	return owners, nil
}
