package etcdstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// onRenewal is a lease store that runs a hook, once armed, just before a
// renewal (an Update) is sent.
type onRenewal struct {
	store.Store[lock.Record]
	armed atomic.Bool
	hook  func()
}

func (s *onRenewal) Update(ctx context.Context, key string, v lock.Record, rev int64, guards ...store.Guard) (store.Object[lock.Record], error) {
	if s.armed.CompareAndSwap(true, false) {
		s.hook()
	}
	return s.Store.Update(ctx, key, v, rev, guards...)
}

// others returns the indexes of the three members other than i.
func others(i int) (int, int) { return (i + 1) % 3, (i + 2) % 3 }

// TestLeaseTermSurvivesLeaderFailoverAtRenewal: a lock.Lease over an
// etcdstore whose client talks to a follower keeps its term when the
// etcd leader is killed (SIGKILL) just as a renewal is sent: the write
// that the follower forwarded to the dead leader is abandoned after its
// attempt timeout and sent again once the cluster has a new leader,
// before the renew deadline. Safety holds throughout: a contender does not
// acquire while the term lasts, the term's guarded writes succeed, and the
// contender's term after the release has a larger token that voids the
// first one's guard.
func TestLeaseTermSurvivesLeaderFailoverAtRenewal(t *testing.T) {
	c := startProcCluster(t, 3)
	ctx := t.Context()
	lead := c.Leader()
	follower, other := others(lead)
	sa, err := etcdstore.New[lock.Record](procClient(t, c.Endpoints(follower)...), "leases/")
	require.NoError(t, err)
	sb, err := etcdstore.New[lock.Record](procClient(t, c.Endpoints(other)...), "leases/")
	require.NoError(t, err)
	killed := make(chan struct{})
	hooked := &onRenewal{Store: sa, hook: func() {
		c.Kill(lead)
		close(killed)
	}}
	opts := lock.LeaseOptions{TTL: 3 * time.Second, RenewInterval: time.Second, RenewDeadline: 2 * time.Second}
	opts.Holder = "a"
	la, err := lock.NewLease(hooked, "leader", opts)
	require.NoError(t, err)
	opts.Holder = "b"
	lb, err := lock.NewLease(sb, "leader", opts)
	require.NoError(t, err)

	a, err := la.Acquire(ctx)
	require.NoError(t, err)
	defer func() { _ = a.Release(context.WithoutCancel(ctx)) }()
	bctx, bcancel := context.WithCancel(ctx)
	defer bcancel()
	bGot := make(chan lock.Lock, 1)
	go func() {
		if b, err := lb.Acquire(bctx); err == nil {
			bGot <- b
		}
		close(bGot)
	}()

	rec, err := sb.Get(ctx, "leader")
	require.NoError(t, err)
	hooked.armed.Store(true)
	<-await(t, chanOf(killed), "the leader killed at a renewal")
	// Two more renewals after the one sent at the kill.
	target := rec.Value.Renewals + 3
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(patience)
	for ; ; <-tick.C {
		require.NoError(t, context.Cause(a.Context()), "the term survives the failover")
		actx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		rec, err = sb.Get(actx, "leader")
		cancel()
		if err == nil {
			require.Equal(t, a.Token(), rec.CreateRevision, "the record is still the term's")
			if rec.Value.Renewals >= target {
				break
			}
		}
		require.True(t, time.Now().Before(deadline), "renewals resumed within %v (at %d of %d)", patience, rec.Value.Renewals, target)
	}
	require.NoError(t, context.Cause(a.Context()), "the term survives the failover")
	select {
	case <-bGot:
		t.Fatal("the contender acquired while the term lasted")
	default:
	}
	fenced, err := sa.Create(ctx, "fenced", lock.Record{Holder: "a"}, a.Guard())
	require.NoError(t, err, "the term's guarded write after the failover")

	require.NoError(t, a.Release(ctx))
	b := await(t, bGot, "the contender's Acquire after the release")
	defer func() { _ = b.Release(context.WithoutCancel(ctx)) }()
	require.Greater(t, b.Token(), a.Token())
	_, err = sa.Update(ctx, "fenced", lock.Record{Holder: "a"}, fenced.Revision, a.Guard())
	require.ErrorIs(t, err, store.ErrGuardFailed, "the released term's guard")
}

// keepAliveHook is a gRPC stream interceptor that runs hook, once armed,
// just before a lease keep-alive request is sent.
type keepAliveHook struct {
	armed atomic.Bool
	hook  func()
}

func (k *keepAliveHook) intercept(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil || method != "/etcdserverpb.Lease/LeaseKeepAlive" {
		return cs, err
	}
	return &hookedStream{ClientStream: cs, k: k}, nil
}

type hookedStream struct {
	grpc.ClientStream
	k *keepAliveHook
}

func (s *hookedStream) SendMsg(m any) error {
	if s.k.armed.CompareAndSwap(true, false) {
		s.k.hook()
	}
	return s.ClientStream.SendMsg(m)
}

// TestLockerTermSurvivesLeaderFailoverAtRenewal: an etcdstore Locker
// whose client talks to a follower keeps its term when the etcd leader
// stops answering (SIGSTOP: its connections stay open, as in a partition
// or a paused machine) just as a lease renewal is sent: the follower
// forwards that renewal to the silent leader and waits for etcd's request
// timeout, but the next attempt, after the attempt timeout (TTL/6), finds
// the new leader before the TTL runs out. Safety holds: a contender does
// not acquire while the term lasts, and acquires with a larger token once
// it is released.
func TestLockerTermSurvivesLeaderFailoverAtRenewal(t *testing.T) {
	c := startProcCluster(t, 3)
	ctx := t.Context()
	lead := c.Leader()
	follower, other := others(lead)
	frozen := make(chan struct{})
	hook := &keepAliveHook{hook: func() {
		c.Freeze(lead)
		close(frozen)
	}}
	t.Cleanup(func() {
		select {
		case <-frozen:
			c.Thaw(lead)
		default:
		}
	})
	clientA, err := clientv3.New(clientv3.Config{
		Endpoints:   c.Endpoints(follower),
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainStreamInterceptor(hook.intercept)},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = clientA.Close() })
	sa := newStore(t, clientA, "app/")
	sb := newStore(t, procClient(t, c.Endpoints(other)...), "app/")
	const ttl = 3 * time.Second
	la, err := etcdstore.NewLocker(sa, "locks/leader", etcdstore.WithLeaseTTL(ttl))
	require.NoError(t, err)
	lb, err := etcdstore.NewLocker(sb, "locks/leader", etcdstore.WithLeaseTTL(ttl))
	require.NoError(t, err)

	a := acquire(t, la)
	bctx, bcancel := context.WithCancel(ctx)
	defer bcancel()
	bGot := acquireAsync(bctx, lb)

	hook.armed.Store(true)
	<-await(t, chanOf(frozen), "the leader frozen at a renewal")
	// The term outlives two TTLs past the fault only if renewals reached
	// the new leader: otherwise the keeper gives up within one TTL.
	alive := time.NewTimer(2 * ttl)
	defer alive.Stop()
	select {
	case <-a.Context().Done():
		t.Fatalf("the term was lost: %v", context.Cause(a.Context()))
	case <-bGot:
		t.Fatal("the contender acquired while the term lasted")
	case <-alive.C:
	}
	_, err = sa.Create(ctx, "fenced", &item{N: 1}, a.Guard())
	require.NoError(t, err, "the term's guarded write after the failover")
	require.NoError(t, a.Release(ctx))
	b := await(t, bGot, "the contender's Acquire after the release")
	t.Cleanup(func() { _ = b.Release(context.WithoutCancel(t.Context())) })
	require.Greater(t, b.Token(), a.Token())
}
