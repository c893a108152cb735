package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/converge-go/converge/store/etcdstore/etcdprocs"
	"github.com/stretchr/testify/require"
)

// freePorts returns n loopback addresses whose ports were free a moment
// ago and lie outside the kernel's ephemeral range (etcdprocs.FreeAddrs):
// peer URLs must be known before the members start, and a restarted member
// needs its old ports, so they cannot use port 0.
func freePorts(t testing.TB, n int) []string {
	t.Helper()
	addrs, err := etcdprocs.FreeAddrs(n)
	require.NoError(t, err)
	return addrs
}

// startCluster starts a cluster of n members on loopback and waits until it
// has a leader.
func startCluster(t *testing.T, n int) []*member {
	t.Helper()
	peers := freePorts(t, n)
	var initial []string
	for i, addr := range peers {
		initial = append(initial, fmt.Sprintf("m%d=http://%s", i, addr))
	}
	members := make([]*member, n)
	for i, addr := range peers {
		cfg := memberConfig(fmt.Sprintf("m%d", i), t.TempDir())
		peer := url.URL{Scheme: "http", Host: addr}
		cfg.ListenPeerUrls = []url.URL{peer}
		cfg.AdvertisePeerUrls = []url.URL{peer}
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = t.Name()
		members[i] = start(t, cfg)
	}
	for _, m := range members {
		waitReady(t, m)
	}
	return members
}

// crash stops the member's server the way a crash would, without handing
// its leadership over first, then closes its listeners in the background:
// that waits for clients to hang up, up to etcd's request timeout. The
// member's cleanup waits for the close to finish (Stop runs once).
func crash(m *member) {
	m.Server.HardStop()
	go m.Stop()
}

// leader returns the member that leads.
func leader(t *testing.T, members []*member) *member {
	t.Helper()
	for _, m := range members {
		if m.Server.Leader() == m.Server.MemberID() {
			return m
		}
	}
	t.Fatal("no member leads")
	return nil
}

// ack is a write that the store acknowledged.
type ack struct {
	key string
	n   int
	rev int64
}

// acks collects acknowledged writes and lets the test wait for a count.
type acks struct {
	mu      sync.Mutex
	list    []ack
	changed chan struct{} // capacity 1: a wake-up, not a count
}

func (a *acks) add(x ack) {
	a.mu.Lock()
	a.list = append(a.list, x)
	a.mu.Unlock()
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

func (a *acks) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.list)
}

// waitFor waits until at least n writes have been acknowledged, failing
// after patience.
func (a *acks) waitFor(t *testing.T, n int) {
	t.Helper()
	timer := time.NewTimer(patience)
	defer timer.Stop()
	for a.count() < n {
		select {
		case <-a.changed:
		case <-timer.C:
			t.Fatalf("%d of %d writes acknowledged within %v", a.count(), n, patience)
		}
	}
}

// retry calls op until it succeeds or fails with an error other than
// store.ErrUnavailable, each attempt bounded by attempt; it gives up after
// patience; failed counts the attempts that failed with
// store.ErrUnavailable.
func retry[R any](ctx context.Context, failed *atomic.Int64, attempt time.Duration, op func(context.Context) (R, error)) (R, error) {
	deadline, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(deadline, attempt)
		r, err := op(actx)
		acancel()
		if !errors.Is(err, store.ErrUnavailable) || deadline.Err() != nil {
			return r, err
		}
		failed.Add(1)
	}
}

// TestLeaderCrashLosesNoAcknowledgedWriteAndQuorumLossIsUnavailable runs
// writers through the store against a 3-member cluster, crashes the leader
// while they write, and checks that the store serves again after the
// election (writers retry on store.ErrUnavailable) and that no acknowledged
// write is lost: each is in the history a watch delivers, at the revision it
// was acknowledged with, exactly once and in order, across the watch's own
// resumptions; and each key's final value is its last acknowledged write or
// a later one. Then a second member is crashed: without a quorum, writes and
// watches fail with store.ErrUnavailable instead of hanging.
func TestLeaderCrashLosesNoAcknowledgedWriteAndQuorumLossIsUnavailable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-member cluster")
	}
	members := startCluster(t, 3)
	var endpoints []string
	for _, m := range members {
		endpoints = append(endpoints, m.Endpoint())
	}
	client := newClient(t, nil, endpoints...)
	ctx := t.Context()
	s := newStore(t, client, "ha/")
	const writers = 4
	const attempt = time.Second
	var unavailable atomic.Int64

	var keys []string
	var created []store.Object[*item]
	for i := range writers {
		key := fmt.Sprintf("w%d", i)
		obj, err := s.Create(ctx, key, &item{N: 0})
		require.NoError(t, err)
		keys = append(keys, key)
		created = append(created, obj)
	}
	start := created[len(created)-1].Revision

	// A consumer watches everything, resuming after the last event it
	// received whenever its watch ends, or cannot open, with
	// store.ErrUnavailable.
	var events []store.Event[*item] // the consumer's until consumerDone
	var seen atomic.Int64
	progress := make(chan struct{}, 1)
	var resumes int // the consumer's until consumerDone
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	consumerDone := make(chan error, 1)
	go func() {
		after := start
		for {
			w, err := s.Watch(watchCtx, "", after)
			if errors.Is(err, store.ErrUnavailable) {
				resumes++ // no member with a leader created it: again
				continue
			}
			if err != nil {
				consumerDone <- err
				return
			}
			for ev := range w.Events() {
				events = append(events, ev)
				after = ev.Object.Revision
				seen.Store(after)
				select {
				case progress <- struct{}{}:
				default:
				}
			}
			err = w.Err()
			w.Stop()
			if !errors.Is(err, store.ErrUnavailable) {
				consumerDone <- err
				return
			}
			resumes++
		}
	}()

	acked := &acks{changed: make(chan struct{}, 1)}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	writeErrs := make(chan error, writers)
	for i, key := range keys {
		cur := created[i]
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				next := cur.Value.N + 1
				obj, err := retry(ctx, &unavailable, attempt, func(ctx context.Context) (store.Object[*item], error) {
					return s.Update(ctx, key, &item{N: next}, cur.Revision)
				})
				switch {
				case err == nil:
					acked.add(ack{key, next, obj.Revision})
					cur = obj
					continue
				case errors.Is(err, store.ErrConflict):
					// An attempt that failed with ErrUnavailable was
					// applied after all; read what the key holds.
				default:
					writeErrs <- fmt.Errorf("update %s to %d: %w", key, next, err)
					return
				}
				if cur, err = retry(ctx, &unavailable, attempt, func(ctx context.Context) (store.Object[*item], error) {
					return s.Get(ctx, key)
				}); err != nil {
					writeErrs <- fmt.Errorf("get %s: %w", key, err)
					return
				}
			}
		})
	}

	acked.waitFor(t, 40)
	crash(leader(t, members))
	acked.waitFor(t, acked.count()+80)
	close(stop)
	wg.Wait()
	close(writeErrs)
	for err := range writeErrs {
		t.Error(err)
	}
	list := acked.list

	// Every key's final value is its last acknowledged write or later.
	last := map[string]ack{}
	for _, a := range list {
		last[a.key] = a
	}
	var final int64
	for _, key := range keys {
		obj, err := retry(ctx, &unavailable, attempt, func(ctx context.Context) (store.Object[*item], error) { return s.Get(ctx, key) })
		require.NoError(t, err)
		require.GreaterOrEqual(t, obj.Value.N, last[key].n, "key %s lost its last acknowledged write", key)
		require.GreaterOrEqual(t, obj.Revision, last[key].rev)
		final = max(final, obj.Revision)
	}

	// The consumer catches up with the final revision, then stops.
	timer := time.NewTimer(patience)
	defer timer.Stop()
	for seen.Load() < final {
		select {
		case <-progress:
		case err := <-consumerDone:
			t.Fatalf("the consumer's watch ended: %v", err)
		case <-timer.C:
			t.Fatalf("the consumer's watch reached revision %d of %d within %v", seen.Load(), final, patience)
		}
	}
	stopWatch()
	require.ErrorIs(t, <-consumerDone, context.Canceled)
	t.Logf("%d writes acknowledged, %d attempts unavailable, the watch resumed %d times",
		len(list), unavailable.Load(), resumes)

	// Every acknowledged write is in the history, at its revision, once;
	// the history is in revision order and each key's values only grow.
	byRev := map[int64]store.Event[*item]{}
	lastN := map[string]int{}
	var prev int64
	for _, ev := range events {
		require.Greater(t, ev.Object.Revision, prev, "events in revision order, none repeated")
		prev = ev.Object.Revision
		require.Equal(t, store.Updated, ev.Type, "only updates after the creates")
		require.Greater(t, ev.Object.Value.N, lastN[ev.Object.Key], "values of %s only grow", ev.Object.Key)
		lastN[ev.Object.Key] = ev.Object.Value.N
		byRev[ev.Object.Revision] = ev
	}
	for _, a := range list {
		ev, ok := byRev[a.rev]
		require.True(t, ok, "acknowledged write %+v missing from the history", a)
		require.Equal(t, a.key, ev.Object.Key, "write at revision %d", a.rev)
		require.Equal(t, a.n, ev.Object.Value.N, "write at revision %d", a.rev)
	}

	// Without a quorum the store fails fast instead of hanging.
	w, err := s.Watch(ctx, "w", final) // the writers' keys, no longer written
	require.NoError(t, err)
	defer w.Stop()
	// A graceful stop hands leadership to the last member, which loses it
	// when it finds itself without a quorum.
	go leader(t, survivors(members)).Stop()
	_, err = retryUntilNoQuorum(ctx, s)
	require.ErrorIs(t, err, store.ErrUnavailable, "a write without a quorum")
	require.ErrorIs(t, watchEnd(t, w), store.ErrUnavailable, "a watch without a quorum")
}

// survivors returns the members that have not been stopped.
func survivors(members []*member) []*member {
	var alive []*member
	for _, m := range members {
		select {
		case <-m.Server.StopNotify():
		default:
			alive = append(alive, m)
		}
	}
	return alive
}

// retryUntilNoQuorum writes until a write fails: writes may still succeed
// until the member's raft notices the lost quorum.
func retryUntilNoQuorum(ctx context.Context, s *etcdstore.Store[*item]) (store.Object[*item], error) {
	deadline, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	for i := 0; ; i++ {
		actx, acancel := context.WithTimeout(deadline, time.Second)
		obj, err := s.Create(actx, fmt.Sprintf("quorum/%d", i), &item{N: i})
		acancel()
		if err != nil || deadline.Err() != nil {
			return obj, err
		}
	}
}
