package etcdstore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const (
	watchMethod     = "/etcdserverpb.Watch/Watch"
	keepAliveMethod = "/etcdserverpb.Lease/LeaseKeepAlive"
)

// stuckCalls is a gRPC stream interceptor that makes chosen etcd streams
// misbehave the way they do when the member is unreachable or stopped
// answering, whatever the machine's load.
type stuckCalls struct {
	// unanswered, if set, names a method whose streams are never opened:
	// opening one waits until its context ends, as opening a stream
	// waits for a connection while no member is reachable.
	unanswered string
	// failing, once set, makes every lease renewal stream fail at once.
	failing atomic.Bool
	// hanging, once set, makes every lease renewal stream hang until
	// released, whatever its context says.
	hanging atomic.Bool
	release chan struct{}
	once    sync.Once
	// deaf, once set, makes watch streams swallow what they receive
	// and wait for their context to end instead.
	deaf atomic.Bool
	// heard is closed when a watch stream first receives a message (the
	// watch's creation).
	heard     chan struct{}
	heardOnce sync.Once
	// noLeader, once set, makes the next message a watch stream receives
	// fail the stream as a member without a leader fails it.
	noLeader atomic.Bool
	// watches counts the watch streams opened.
	watches atomic.Int32
	// gate, while set, holds the opening of watch streams until closed.
	gateMu sync.Mutex
	gate   chan struct{}
}

// holdWatches makes watch streams wait to open until releaseWatches.
func (s *stuckCalls) holdWatches() {
	s.gateMu.Lock()
	defer s.gateMu.Unlock()
	s.gate = make(chan struct{})
}

// releaseWatches lets the held watch streams open.
func (s *stuckCalls) releaseWatches() {
	s.gateMu.Lock()
	defer s.gateMu.Unlock()
	if s.gate != nil {
		close(s.gate)
		s.gate = nil
	}
}

func (s *stuckCalls) watchGate() chan struct{} {
	s.gateMu.Lock()
	defer s.gateMu.Unlock()
	return s.gate
}

func newStuckCalls() *stuckCalls {
	return &stuckCalls{release: make(chan struct{}), heard: make(chan struct{})}
}

func (s *stuckCalls) intercept(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	unreachable := status.Error(codes.Unavailable, "test: member unreachable")
	switch {
	case method == s.unanswered:
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	case method == keepAliveMethod && s.failing.Load():
		return nil, unreachable
	case method == keepAliveMethod && s.hanging.Load():
		<-s.release
		return nil, unreachable
	case method == watchMethod:
		s.watches.Add(1)
		if gate := s.watchGate(); gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, status.FromContextError(ctx.Err()).Err()
			}
		}
		cs, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, err
		}
		return &deafStream{ClientStream: cs, calls: s}, nil
	}
	return streamer(ctx, desc, cc, method, opts...)
}

// deafStream is a watch stream that stops hearing once its calls are deaf.
type deafStream struct {
	grpc.ClientStream
	calls *stuckCalls
}

func (d *deafStream) RecvMsg(m any) error {
	err := d.ClientStream.RecvMsg(m)
	if err == nil {
		d.calls.heardOnce.Do(func() { close(d.calls.heard) })
		if d.calls.noLeader.CompareAndSwap(true, false) {
			return rpctypes.ErrGRPCNoLeader
		}
	}
	if d.calls.deaf.Load() {
		<-d.Context().Done()
		return status.FromContextError(d.Context().Err()).Err()
	}
	return err
}

// unblock lets hanging calls return; it is safe to call more than once.
func (s *stuckCalls) unblock() { s.once.Do(func() { close(s.release) }) }

// stuckClient returns a client of endpoint whose streams go through s,
// closed at cleanup after s's hanging calls are let go.
func stuckClient(t *testing.T, s *stuckCalls, endpoint string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithStreamInterceptor(s.intercept)},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	t.Cleanup(s.unblock) // runs first: a hanging call must not hold up Close
	t.Cleanup(s.releaseWatches)
	return c
}

// acquireThrough acquires a lock with a TTL of one second on a new
// one-member cluster, through a client whose streams go through calls; it
// returns the lock, a context to release it with, and the client.
func acquireThrough(t *testing.T, calls *stuckCalls) (lock.Lock, context.Context, *clientv3.Client) {
	t.Helper()
	client := stuckClient(t, calls, startServer(t, nil).Endpoint())
	l, err := etcdstore.NewLocker(newStore(t, client, "app/"), "locks/leader", etcdstore.WithLeaseTTL(time.Second))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	t.Cleanup(cancel)
	a, err := l.Acquire(ctx)
	require.NoError(t, err)
	return a, ctx, client
}

// TestLockerGivesUpWhenRenewalsFailWhileItsKeyIsNotYetWatched: a term
// ends with lock.ErrLost once its renewals fail, even while the watch on
// its leader key has not been opened (the member went away between the
// campaign and the watch, and the client waits for it to come back). The
// end of a term must not wait for the watch to open.
func TestLockerGivesUpWhenRenewalsFailWhileItsKeyIsNotYetWatched(t *testing.T) {
	calls := newStuckCalls()
	calls.unanswered = watchMethod
	a, ctx, _ := acquireThrough(t, calls)

	calls.failing.Store(true)
	<-await(t, chanOf(a.Context().Done()), "the term's end once renewals fail")
	require.ErrorIs(t, context.Cause(a.Context()), lock.ErrLost)

	calls.failing.Store(false)
	require.NoError(t, a.Release(ctx), "releasing once the member answers renewals again")
}

// TestLockerGivesUpWhenARenewalNeverReturns: a term ends with lock.ErrLost
// once no renewal has succeeded for the TTL, even when a renewal call
// never returns (ignoring its deadline): the give-up is timed apart from
// the calls. The watch on the leader key hears nothing once the renewals
// hang, as when the member is cut off: the lease's expiry on the cluster
// does not reach the holder.
func TestLockerGivesUpWhenARenewalNeverReturns(t *testing.T) {
	calls := newStuckCalls()
	a, ctx, _ := acquireThrough(t, calls)

	<-await(t, chanOf(calls.heard), "the watch on the leader key")
	calls.deaf.Store(true)
	calls.hanging.Store(true)
	<-await(t, chanOf(a.Context().Done()), "the term's end while a renewal hangs")
	require.ErrorIs(t, context.Cause(a.Context()), lock.ErrLost)

	calls.hanging.Store(false)
	calls.deaf.Store(false)
	calls.unblock()
	require.NoError(t, a.Release(ctx), "releasing once the hanging renewal returned")
}
