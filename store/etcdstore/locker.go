package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/store"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// DefaultLeaseTTL is the TTL of a Locker's etcd lease unless WithLeaseTTL
// says otherwise.
const DefaultLeaseTTL = 10 * time.Second

// Locker is a lock.Locker on a native etcd election (clientv3/concurrency):
// each Acquire grants a lease that the client keeps alive, campaigns with a
// key bound to it under the election's prefix, and holds the lock once its
// key is the oldest there. The fencing token is that key's CreateRevision;
// Lock.Guard names the key, relative to the Store's prefix, so writes made
// through the Store (or any Store on the same client prefix) with the guard
// fail with store.ErrGuardFailed once the term is over: after Release, or
// after the lease expired or was revoked, the key is gone.
//
// A Lock's context is cancelled, with a cause matching lock.ErrLost, when
// its lease is no longer being kept alive (etcd reported it expired, or no
// renewal succeeded within the TTL), when its key is deleted by anyone
// else, or when, after a gap in the watch on its key that compaction
// erased, its key is found gone or another term's. A watch that merely
// fails (its member lost the cluster's leader during an election, a
// connection broke) is opened again from where it stopped: it says nothing
// about the key, and the TTL bounds how long a holder that cannot reach
// the cluster goes on. Between the lease's expiry on the cluster and the
// client noticing, the guard is what keeps a deposed holder's writes out.
//
// A holder whose renewals fail gives up no later than the TTL after the
// sending of its last successful renewal, before etcd could expire the
// lease and let another contender in. That give-up is timed apart from
// every etcd call: a renewal that does not return, or a watch that waits
// for an unreachable member to come back, never holds the term alive.
//
// The lease is renewed every TTL/3 with one request at a time, each
// attempt bounded by TTL/6 and retried at once on whichever member the
// client picks: a renewal stuck on a member whose leader just died (etcd
// makes it wait for its request timeout, about 5 s) does not cost the
// term, which survives a leader failover that completes within about
// two thirds of the TTL.
type Locker struct {
	client *clientv3.Client
	prefix string // the election's etcd prefix, without the trailing "/"
	store  string // the Store's prefix, trimmed from guard keys
	ttl    int    // seconds
}

var _ lock.Locker = (*Locker)(nil)

// LockerOption configures NewLocker.
type LockerOption func(*lockerConfig)

type lockerConfig struct{ ttl time.Duration }

// WithLeaseTTL sets the TTL of each term's etcd lease, the concept
// lock.LeaseOptions.TTL names for a lease over any Store: rounded up to
// whole seconds (at least one second; zero selects DefaultLeaseTTL). A
// holder that stops renewing (a crash, a partition) keeps the lock for up
// to the TTL; shorter TTLs hand over faster and renew more often.
func WithLeaseTTL(ttl time.Duration) LockerOption {
	return func(c *lockerConfig) { c.ttl = ttl }
}

// NewLocker returns a Locker on the election named name under the Store's
// prefix: its keys are the Store's prefix, name, "/" and a lease ID. Those
// keys hold no value of T, so keep them out of what the Store's users list
// and watch: put objects and elections under different sub-prefixes (for
// example objects under "objects/" and the election "locks/leader"); a List
// or Watch that reaches an election key fails to decode it. It
// fails with store.ErrInvalid if s is nil, name is not a valid key or leaves
// no room for the lease ID within store.MaxKeyLen, or an option is out of
// range.
func NewLocker[T any](s *Store[T], name string, opts ...LockerOption) (*Locker, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: nil store", store.ErrInvalid)
	}
	if err := store.ValidateKey(name); err != nil {
		return nil, fmt.Errorf("etcdstore: election name: %w", err)
	}
	const leaseKeyLen = 1 + 16 // "/" and a lease ID in hex
	if len(name)+leaseKeyLen > store.MaxKeyLen {
		return nil, fmt.Errorf("%w: election name of %d bytes leaves no room for a lease ID", store.ErrInvalid, len(name))
	}
	var cfg lockerConfig
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil locker option", store.ErrInvalid)
		}
		o(&cfg)
	}
	if cfg.ttl == 0 {
		cfg.ttl = DefaultLeaseTTL
	}
	if cfg.ttl < time.Second || cfg.ttl > math.MaxInt32*time.Second {
		return nil, fmt.Errorf("%w: lease TTL %v, want 1s to %v", store.ErrInvalid, cfg.ttl, math.MaxInt32*time.Second)
	}
	return &Locker{
		client: s.client,
		prefix: s.prefix + name,
		store:  s.prefix,
		ttl:    int((cfg.ttl + time.Second - 1) / time.Second),
	}, nil
}

// Acquire blocks until this process leads the election, or returns ctx's
// error once ctx ends (a failure to reach the cluster matches
// store.ErrUnavailable). The Lock outlives ctx; its lease is kept alive
// until Release or loss. A failed Acquire leaves no key and no lease.
func (l *Locker) Acquire(ctx context.Context) (lock.Lock, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", store.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sent := time.Now()
	grant, err := l.client.Grant(clientv3.WithRequireLeader(ctx), int64(l.ttl))
	if err != nil {
		return nil, requestError(ctx, err, "lock %q: grant lease", l.prefix)
	}
	keeper := keepAlive(l.client, grant.ID, time.Duration(grant.TTL)*time.Second, sent)
	// The election needs a session; its keep-alive, one stream for every
	// renewal of the client, is replaced by the keeper's bounded attempts
	// (see keeper): orphaning the session stops it at once.
	session, err := concurrency.NewSession(l.client, concurrency.WithLease(grant.ID),
		concurrency.WithTTL(l.ttl), concurrency.WithContext(context.WithoutCancel(ctx)))
	if err != nil {
		keeper.stop()
		l.revoke(grant.ID)
		return nil, requestError(ctx, err, "lock %q: session", l.prefix)
	}
	session.Orphan()
	election := concurrency.NewElection(session, l.prefix)
	// Campaign cleans up after a cancelled context with a request that
	// waits for the cluster: run it aside, so that Acquire returns as soon
	// as ctx ends even when the cluster is unreachable, and clean up when
	// the campaign gives up.
	campaigned := make(chan error, 1)
	go func() { campaigned <- election.Campaign(clientv3.WithRequireLeader(ctx), "") }()
	giveUp := func() {
		keeper.stop()
		l.revoke(grant.ID)
	}
	select {
	case err := <-campaigned:
		if err != nil {
			giveUp()
			return nil, requestError(ctx, err, "lock %q: campaign", l.prefix)
		}
		return l.startTerm(ctx, keeper, session, election), nil
	case <-ctx.Done():
		go func() {
			<-campaigned // whether it won or not, this Acquire gave up
			giveUp()
		}()
		return nil, ctx.Err()
	}
}

// revoke revokes a lease of a failed Acquire, best effort: if the cluster
// cannot be reached the lease expires after the TTL.
func (l *Locker) revoke(id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(l.client.Ctx(), time.Duration(l.ttl)*time.Second)
	defer cancel()
	_, _ = l.client.Revoke(ctx, id)
}

// term is one term of holding a Locker.
type term struct {
	locker   *Locker
	keeper   *keeper
	session  *concurrency.Session
	election *concurrency.Election
	key      string // the leader key, relative to the Store's prefix
	token    int64

	ctx    context.Context
	cancel context.CancelCauseFunc
	done   sync.WaitGroup // the expire and monitor goroutines

	releaseMu sync.Mutex
	released  bool
}

var _ lock.Lock = (*term)(nil)

func (l *Locker) startTerm(ctx context.Context, keeper *keeper, session *concurrency.Session, election *concurrency.Election) *term {
	t := &term{
		locker:   l,
		keeper:   keeper,
		session:  session,
		election: election,
		key:      election.Key()[len(l.store):],
		token:    election.Rev(),
	}
	t.ctx, t.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	t.done.Go(t.expire)
	t.done.Go(t.monitor)
	return t
}

// expire cancels the term's context with lock.ErrLost as soon as its
// keeper reports the lease no longer kept alive. It waits for nothing
// else: the watch that monitor opens can keep monitor inside the client
// for as long as no member answers (clientv3's Watch returns only once the
// watch is created, retrying while the cluster is unreachable), and the
// end of the term must not wait for that.
func (t *term) expire() {
	select {
	case <-t.keeper.Lost():
		t.cancel(fmt.Errorf("%w: %q: etcd lease no longer kept alive: %w", lock.ErrLost, t.key, t.keeper.Err()))
	case <-t.ctx.Done():
	}
}

// monitor cancels the term's context with lock.ErrLost when its key is
// deleted, or found gone or re-created (another term's) after a gap in the
// watch. A watch that fails for another reason (its member lost the etcd
// leader during an election, the connection broke) is opened again from
// the revision after the last it delivered, after watchRetry: such a
// failure says nothing about the key, and the term's end by time is
// expire's (the keeper gives up at the TTL after the last renewal), so a
// leader election shorter than the TTL does not end the term. It opens the
// watch itself, as opening waits for a connection (until the term's
// context ends).
func (t *term) monitor() {
	next := t.token + 1 // the first revision not yet watched
	for t.ctx.Err() == nil {
		var lost error
		next, lost = t.watchFrom(next)
		if lost != nil {
			t.cancel(lost)
			return
		}
		select {
		case <-t.ctx.Done():
			return
		case <-time.After(watchRetry):
		}
	}
}

// watchRetry is how long monitor waits before it opens a failed watch on
// a term's key again.
const watchRetry = 100 * time.Millisecond

// watchFrom watches the term's key from revision next until the watch
// fails or the term ends. It returns the next revision to watch from, and
// a non-nil error (matching lock.ErrLost) once the term is known lost.
func (t *term) watchFrom(next int64) (int64, error) {
	wctx, stop := context.WithCancel(clientv3.WithRequireLeader(t.ctx))
	defer stop()
	key := t.locker.store + t.key
	for resp := range t.locker.client.Watch(wctx, key, clientv3.WithRev(next)) {
		if t.ctx.Err() != nil {
			return next, nil // released or lost meanwhile
		}
		if resp.CompactRevision != 0 || errors.Is(resp.Err(), rpctypes.ErrCompacted) {
			// Revisions were compacted away before they were watched:
			// whether the key went in between, only a read can tell.
			return t.checkKey(next)
		}
		if resp.Err() != nil {
			return next, nil // open it again
		}
		for _, ev := range resp.Events {
			if ev.Type == clientv3.EventTypeDelete {
				return next, fmt.Errorf("%w: %q: leader key deleted at revision %d", lock.ErrLost, t.key, ev.Kv.ModRevision)
			}
			next = max(next, ev.Kv.ModRevision+1)
		}
	}
	return next, nil // the client closed the watch; open it again
}

// checkKey reads the term's key after a compacted gap in its watch: the
// term is lost if the key is gone or belongs to another term; otherwise
// the watch resumes after the revision read. A failed read leaves next as
// it is, for another attempt.
func (t *term) checkKey(next int64) (int64, error) {
	rctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(t.ctx), watchRetry*10)
	defer cancel()
	resp, err := t.locker.client.Get(rctx, t.locker.store+t.key)
	if err != nil {
		return next, nil
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != t.token {
		return next, fmt.Errorf("%w: %q: leader key gone or re-created while its watch was compacted", lock.ErrLost, t.key)
	}
	return resp.Header.Revision + 1, nil
}

// Context is cancelled when the term is lost or released; its cause matches
// lock.ErrLost or lock.ErrReleased.
func (t *term) Context() context.Context { return t.ctx }

// Token is the CreateRevision of the term's leader key.
func (t *term) Token() int64 { return t.token }

// Guard holds while the term's leader key exists with the term's
// CreateRevision.
func (t *term) Guard() store.Guard {
	return store.Guard{Key: t.key, Revision: t.token, Created: true}
}

// Release cancels the term's context, deletes its leader key if it is
// still the term's, and revokes its lease, so that the next contender takes
// over at once. If that fails (the error matches store.ErrUnavailable or is
// ctx's), Release may be called again; otherwise the lease expires within
// the TTL. Once it has succeeded, further calls return nil.
func (t *term) Release(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", store.ErrInvalid)
	}
	t.releaseMu.Lock()
	defer t.releaseMu.Unlock()
	if t.released {
		return nil
	}
	t.cancel(fmt.Errorf("%w: %q", lock.ErrReleased, t.key))
	t.done.Wait()
	// Resign deletes the key only if it still has the term's
	// CreateRevision; revoking the lease would delete it too, and stops
	// the keep-alive.
	resignErr := t.election.Resign(clientv3.WithRequireLeader(ctx))
	t.keeper.stop()
	_, err := t.locker.client.Revoke(clientv3.WithRequireLeader(ctx), t.session.Lease())
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		err = nil // expired or revoked already: the key is gone
	}
	if err != nil {
		return requestError(ctx, errors.Join(resignErr, err), "release lock %q", t.key)
	}
	t.released = true
	return nil
}
