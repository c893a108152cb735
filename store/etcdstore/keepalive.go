package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// keeper keeps an etcd lease alive with one bounded request at a time, so
// that a renewal stuck on a member whose leader just died is abandoned and
// sent again (to a member that knows the new leader) long before the lease
// runs out. etcd's own keep-alive sends every renewal of a client on one
// stream, which waits for a stuck renewal for the server's request timeout
// (about 5 s, more than many TTLs).
//
// Timing, for a TTL of t: a renewal every t/3 after the sending of the last
// successful one; each attempt bounded by t/6 and started at most every
// t/6; the lease counts as lost once t has passed since the sending of the
// last successful renewal (the cluster's expiry comes no sooner: it counts
// from when it received that renewal, and a new leader restarts every
// lease's TTL), or at once if etcd reports it expired.
//
// The give-up at the TTL is timed by a timer of its own (watchdog), not by
// the renewing goroutine: a renewal call that does not return, whatever
// its deadline says, cannot keep the lease counted as alive.
type keeper struct {
	client *clientv3.Client
	id     clientv3.LeaseID
	ttl    time.Duration

	ctx    context.Context // cancelled by stop
	cancel context.CancelFunc
	// watchdog fails the keeper when the TTL has passed since the sending
	// of the last successful renewal; each successful renewal pushes it
	// back (see extend).
	watchdog *time.Timer
	lost     chan struct{} // closed when the lease is no longer kept alive
	err      error         // why, set before lost closes
	failOnce sync.Once
	exited   chan struct{}
}

// keepAlive starts keeping the lease id alive; sent is when the request
// that granted it, with ttl, was sent.
func keepAlive(client *clientv3.Client, id clientv3.LeaseID, ttl time.Duration, sent time.Time) *keeper {
	k := &keeper{
		client: client,
		id:     id,
		ttl:    ttl,
		lost:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	k.ctx, k.cancel = context.WithCancel(client.Ctx())
	k.watchdog = time.AfterFunc(time.Until(sent.Add(ttl)), k.expired)
	go k.run(sent)
	return k
}

// stop stops renewing and waits for the keeper to finish; the lease then
// expires after its TTL unless it is revoked.
func (k *keeper) stop() {
	k.cancel()
	k.watchdog.Stop()
	<-k.exited
}

// expired is the watchdog's: the TTL has passed since the sending of the
// last successful renewal.
func (k *keeper) expired() {
	if k.ctx.Err() != nil {
		return // stopped: nobody counts on the lease any more
	}
	k.fail(fmt.Errorf("no renewal succeeded within the lease's TTL (%v)", k.ttl))
}

// extend moves the give-up to deadline (the sending of a successful
// renewal plus the TTL etcd answered), unless the watchdog has fired
// already; it reports whether the lease is still counted as kept alive.
func (k *keeper) extend(deadline time.Time) bool {
	if !k.watchdog.Stop() {
		return false
	}
	k.watchdog.Reset(time.Until(deadline)) // fires at once if passed
	return true
}

// Lost is closed when the lease is no longer kept alive; Err then says why.
func (k *keeper) Lost() <-chan struct{} { return k.lost }

func (k *keeper) Err() error {
	select {
	case <-k.lost:
		return k.err
	default:
		return nil
	}
}

func (k *keeper) run(sent time.Time) {
	defer close(k.exited)
	interval, attempt := k.ttl/3, k.ttl/6
	deadline := sent.Add(k.ttl)
	next := sent.Add(interval)
	timer := time.NewTimer(time.Until(next))
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
		case <-k.lost:
			return
		case <-k.ctx.Done():
			return
		}
		start := time.Now()
		if !start.Before(deadline) {
			k.expired()
			return
		}
		actx, cancel := context.WithDeadline(clientv3.WithRequireLeader(k.ctx), minTime(start.Add(attempt), deadline))
		ttl, err := k.once(actx)
		cancel()
		switch {
		case k.ctx.Err() != nil:
			return
		case err == nil && ttl <= 0, errors.Is(err, rpctypes.ErrLeaseNotFound):
			k.fail(errors.New("etcd reports the lease expired"))
			return
		case err == nil:
			deadline = start.Add(time.Duration(ttl) * time.Second)
			if !k.extend(deadline) {
				return // the watchdog gave up while the call was out
			}
			next = start.Add(interval)
		default:
			// Stuck or refused: try again, on whichever member the
			// client picks, as soon as this attempt's time is up.
			next = start.Add(attempt)
		}
		timer.Reset(time.Until(minTime(next, deadline)))
	}
}

// once sends one renewal on a stream of its own, on whichever member the
// client's balancer picks, and returns the TTL etcd answers (0 or less:
// the lease has expired). Unlike the client's KeepAliveOnce, which tries
// again at once while the cluster is unavailable, it makes one attempt.
func (k *keeper) once(ctx context.Context) (int64, error) {
	stream, err := pb.NewLeaseClient(k.client.ActiveConnection()).LeaseKeepAlive(ctx)
	if err != nil {
		return 0, err
	}
	if err := stream.Send(&pb.LeaseKeepAliveRequest{ID: int64(k.id)}); err != nil {
		return 0, err
	}
	resp, err := stream.Recv()
	if err != nil {
		return 0, err
	}
	_ = stream.CloseSend()
	return resp.TTL, nil
}

// fail reports the lease lost with err; only the first call counts.
func (k *keeper) fail(err error) {
	k.failOnce.Do(func() {
		k.err = err
		close(k.lost)
	})
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
