package etcdstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/stretchr/testify/require"
)

// TestQuorumLossEndsTheWatchAndItResumes, on a 3-member cluster of etcd
// processes: when the leader and a second member are killed, the watch
// does not stay silent: it ends with store.ErrUnavailable (its member has
// no leader); a new Watch fails with store.ErrUnavailable instead of
// returning a watch that does not exist; Revision with a deadline fails
// with store.ErrUnavailable. Once the members are restarted, a watch from
// the last revision delivered catches up: every acknowledged write is
// delivered once, in order, none lost.
func TestQuorumLossEndsTheWatchAndItResumes(t *testing.T) {
	c := startProcCluster(t, 3)
	ctx := t.Context()
	s := newStore(t, procClient(t, c.Endpoints()...), "app/", etcdstore.WithWatchOpenTimeout(time.Second))
	start, err := s.Revision(ctx)
	require.NoError(t, err)
	w, err := s.Watch(ctx, "", start)
	require.NoError(t, err)
	defer w.Stop()

	var acked []store.Object[*item]
	write := func(n int) {
		obj, err := s.Create(ctx, fmt.Sprintf("k%02d", n), &item{N: n})
		require.NoError(t, err)
		acked = append(acked, obj)
	}
	for n := range 10 {
		write(n)
	}
	lead := c.Leader()
	second, _ := others(lead)
	c.Kill(lead)
	c.Kill(second)

	// The watch delivers what it had, then ends.
	var got []store.Event[*item]
	timer := time.NewTimer(patience)
	defer timer.Stop()
	for ended := false; !ended; {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				ended = true
				break
			}
			got = append(got, ev)
		case <-timer.C:
			t.Fatalf("the watch neither ended nor delivered within %v of the quorum loss", patience)
		}
	}
	require.ErrorIs(t, w.Err(), store.ErrUnavailable, "the watch of a member without a leader")
	_, err = s.Watch(ctx, "", start)
	require.ErrorIs(t, err, store.ErrUnavailable, "Watch without a quorum")
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = s.Revision(short)
	cancel()
	require.ErrorIs(t, err, store.ErrUnavailable, "Revision without a quorum")

	c.Start(lead)
	c.Start(second)
	c.WaitServing(c.Endpoints()...)
	write(10)
	last := start
	if len(got) > 0 {
		last = got[len(got)-1].Object.Revision
	}
	var w2 store.Watcher[*item]
	require.Eventually(t, func() bool {
		w2, err = s.Watch(ctx, "", last)
		return err == nil
	}, patience, 10*time.Millisecond, "a watch opens again")
	defer w2.Stop()
	requestProgress(t, w2)
	rest, p := untilProgress(t, w2)
	require.GreaterOrEqual(t, p.Object.Revision, acked[len(acked)-1].Revision)
	got = append(got, rest...)
	require.Len(t, got, len(acked), "every acknowledged write, once")
	for i, obj := range acked {
		require.Equal(t, store.Event[*item]{Type: store.Created, Object: obj}, got[i], "in order, none lost")
	}
}
