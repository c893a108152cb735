package reconcile

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// TestSilentOutageIsDetectedWithinTwoHeartbeats models an etcd member cut
// off from its cluster: every call fails while the open watch stays open,
// delivers nothing and answers no progress request. Health must say
// degraded within two heartbeats, stay degraded without flapping while the
// outage lasts (retrying with a growing backoff), keep reconciling from the
// cache, and clear once the store serves again, with the changes made
// meanwhile reconciled.
func TestSilentOutageIsDetectedWithinTwoHeartbeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const hb = time.Second
		s := newTxnStore()
		rec := &recorder{}
		c := newTxnController(t, s, rec, Options[*item]{HeartbeatInterval: hb})
		defer start(t, c)()
		s.txn(write{"a", &item{Want: 1}})
		synctest.Wait()
		require.Empty(t, c.Health().Degraded)

		s.setSilent(true)
		advance(2*hb + time.Millisecond)
		require.NotEmpty(t, c.Health().Degraded, "a silent outage was not detected within two heartbeats")

		// Degraded for as long as it lasts, never flapping, and the loop
		// keeps healing from its cache.
		watchesBefore := s.watchCalls()
		for range 600 {
			advance(hb / 10)
			require.NotEmpty(t, c.Health().Degraded, "health flapped to not degraded during the outage")
		}
		c.Enqueue("a")
		synctest.Wait()
		req, ok := rec.last("a")
		require.True(t, ok)
		require.Equal(t, 1, req.Object.Value.Want, "the cache was not kept during the outage")
		// A minute of outage: with a backoff that grows towards 10 s there
		// are a handful of attempts; one reset by every attempt would make
		// one every two heartbeats or so.
		require.Less(t, s.watchCalls()-watchesBefore, 15, "the retry backoff did not grow while the store stayed down")

		// Changes made by others during the outage arrive once it ends.
		s.setSilent(false)
		rev := s.txn(write{"a", &item{Want: 2}}, write{"b", &item{Want: 3}})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, c.WaitForRevision(ctx, rev))
		require.Empty(t, c.Health().Degraded, "health still degraded after the store recovered")
		req, _ = rec.last("b")
		require.Equal(t, rev, req.Object.Revision)
	})
}

// TestSourceStoreOutageIsReported checks the same detection for a store
// watched as a source.
func TestSourceStoreOutageIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		primary := newTxnStore()
		other := newTxnStore()
		c := newTxnController(t, primary, &recorder{}, Options[*item]{
			HeartbeatInterval: time.Second,
			Sources:           []Source{FromStore[*item](other, "", func(_, _ *store.Object[*item]) []string { return nil })},
		})
		defer start(t, c)()
		synctest.Wait()
		other.setSilent(true)
		advance(2*time.Second + time.Millisecond)
		require.Len(t, c.Health().Degraded, 1)
		other.setSilent(false)
		advance(15 * time.Second)
		require.Empty(t, c.Health().Degraded)
	})
}
