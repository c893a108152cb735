package reconcile

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
)

// TestLastErrorFollowsTheLatestReconcile: the error text, kept apart from
// the per-key record, shows while the latest reconcile failed and goes
// once a reconcile succeeds or the key is deleted, in Snapshot and Inspect
// alike, leaving no text behind.
func TestLastErrorFollowsTheLatestReconcile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "a", &item{Want: 1})
		put(t, s, "b", &item{Want: 1})
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			if !req.Deleted && req.Object.Value.Want == 1 {
				return Result{}, errors.New("want 1 refused")
			}
			return Result{}, nil
		}}
		c, err := New(s, rec, Options[*item]{Name: "lasterr"})
		require.NoError(t, err)
		stop := start(t, c)
		defer stop()
		advance(time.Second)
		inspected := func(key string) KeyState {
			for _, k := range c.Inspect(KeyQuery{}).Keys {
				if k.Key == key {
					return k
				}
			}
			return KeyState{Key: key}
		}
		for _, key := range []string{"a", "b"} {
			require.Equal(t, "want 1 refused", snapshotOf(c, key).LastError, key)
			require.Equal(t, "want 1 refused", inspected(key).LastError, key)
		}

		put(t, s, "a", &item{Want: 2}) // now accepted
		obj, err := s.Get(context.Background(), "b")
		require.NoError(t, err)
		_, err = s.Delete(context.Background(), "b", obj.Revision)
		require.NoError(t, err)
		advance(time.Hour)
		require.Equal(t, Success, snapshotOf(c, "a").LastOutcome)
		require.Empty(t, snapshotOf(c, "a").LastError)
		require.Empty(t, inspected("a").LastError)
		c.mu.Lock()
		defer c.mu.Unlock()
		require.Empty(t, c.led.errs, "error text left behind")
	})
}
