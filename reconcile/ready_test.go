package reconcile

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
	"github.com/stretchr/testify/require"
)

// Readiness follows the store: through a silent outage (calls fail, the
// watch stays open and mute) and a loud one (the watch ends), Ready fails
// with ErrDegraded, naming what Health reports, within two heartbeats
// and for as long as the outage lasts, while Healthy stays nil and the
// loop keeps reconciling from its cache; once the store serves again,
// Ready is nil.
func TestReadyFailsWithErrDegradedWhileTheStoreIsUnreachable(t *testing.T) {
	for _, outage := range []faultstore.Outage{faultstore.Silent, faultstore.Loud} {
		t.Run(outage.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const hb = time.Second
				s := faulty(t, store.NewMemory[*item]())
				put(t, s, "a", &item{Want: 1})
				rec := &recorder{}
				c, err := New[*item](s, rec, Options[*item]{Name: "ready", HeartbeatInterval: hb})
				require.NoError(t, err)
				defer start(t, c)()
				synctest.Wait()
				require.NoError(t, c.Ready())

				s.SetOutage(outage)
				advance(2*hb + time.Millisecond)
				for range 100 {
					err := c.Ready()
					require.ErrorIs(t, err, ErrDegraded, "ready while the store is unreachable")
					h := c.Health()
					require.NotEmpty(t, h.Degraded)
					require.ErrorContains(t, err, strings.TrimPrefix(h.Degraded[0], "store: "), "Ready names why")
					require.NoError(t, c.Healthy(), "a degraded store is not unhealthy")
					advance(hb / 2)
				}
				require.NoError(t, c.Enqueue("a"))
				synctest.Wait()
				req, _ := rec.last("a")
				require.Equal(t, 1, req.Object.Value.Want, "the loop stopped reconciling from its cache")

				s.SetOutage(faultstore.Up)
				advance(15 * time.Second)
				require.Empty(t, c.Health().Degraded)
				require.NoError(t, c.Ready(), "not ready again once the store serves")
			})
		})
	}
}

// Another source's store being unreachable is reported in Health but
// leaves the controller ready: it still follows its own store.
func TestADegradedSourceStoreLeavesTheControllerReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		other := faulty(t, store.NewMemory[*item]())
		c, err := New[*item](store.NewMemory[*item](), &recorder{}, Options[*item]{Name: "ready", HeartbeatInterval: time.Second,
			Sources: []Source{FromStore[*item](other, "", func(_, _ *store.Object[*item]) []string { return nil })}})
		require.NoError(t, err)
		defer start(t, c)()
		synctest.Wait()
		other.SetOutage(faultstore.Silent)
		advance(2*time.Second + time.Millisecond)
		require.Len(t, c.Health().Degraded, 1)
		require.NoError(t, c.Ready())
		other.SetOutage(faultstore.Up)
		advance(15 * time.Second)
	})
}

// Once WaitForSync has returned, Ready is nil (with the store up): the
// first list proves the store reachable before the cache counts as synced,
// so no reader sees a synced cache reported degraded.
func TestReadyIsNilOnceWaitForSyncReturns(t *testing.T) {
	for range 300 {
		synctest.Test(t, func(t *testing.T) {
			s := store.NewMemory[*item]()
			put(t, s, "a", &item{})
			c, err := New[*item](s, &recorder{}, Options[*item]{Name: "sync"})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx) }()
			defer func() { cancel(); require.NoError(t, <-done) }()
			require.NoError(t, c.WaitForSync(ctx))
			require.NoError(t, c.Ready(), "synced but not ready")
		})
	}
}
