package reconcile

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store/checkpoint"
	"github.com/converge-go/converge/store/faultstore"
	"github.com/stretchr/testify/require"
)

// A checkpoint exactly MaxAge old when the controller loads it, or seen in
// the future by no more than checkpoint.MaxSkew, is used; one a nanosecond
// older, or further in the future (a year ahead passed a MaxAge of 1 s), is
// refused, nothing of it reconciled, and Health says why.
func TestACheckpointSeenInTheFutureIsRefusedAndOneAtItsMaximumAgeUsed(t *testing.T) {
	const startAfter = 3 * cpHeartbeat
	cases := []struct {
		name    string
		maxAge  time.Duration
		seen    time.Duration // from the controller's start
		refusal error         // nil: used
	}{
		{"exactly MaxAge old", time.Hour, startAfter - time.Hour, nil},
		{"a nanosecond past MaxAge", time.Hour, startAfter - time.Hour - 1, checkpoint.ErrTooOld},
		{"MaxSkew in the future", time.Hour, startAfter + checkpoint.MaxSkew, nil},
		{"past MaxSkew in the future", time.Hour, startAfter + checkpoint.MaxSkew + 1, checkpoint.ErrFuture},
		{"a year in the future, MaxAge 1s", time.Second, 365 * 24 * time.Hour, checkpoint.ErrFuture},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem, _, _ := abc(t)
				st := checkpointOf(t, mem, time.Now().Add(tc.seen))
				fs := faulty(t, mem)
				fs.SetOutage(faultstore.Loud)
				rec := &recorder{}
				c := newCheckpointed(t, fs, rec, newMemCheckpoint(st), Options[*item]{Checkpoint: checkpoint.Options[*item]{MaxAge: tc.maxAge}})
				defer runUnsynced(t, c)()
				advance(startAfter)
				synctest.Wait()
				h := c.Health()
				if tc.refusal == nil {
					require.Equal(t, []string{"a", "b", "c"}, rec.keysReconciled())
					require.True(t, h.Checkpoint.Active)
					require.Empty(t, h.Checkpoint.Refused)
				} else {
					require.Empty(t, rec.keysReconciled(), "a refused checkpoint was reconciled")
					require.False(t, h.Checkpoint.Active)
					require.Contains(t, h.Checkpoint.Refused, tc.refusal.Error())
				}
				fs.SetOutage(faultstore.Up)
			})
		})
	}
}
