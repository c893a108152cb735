package checkpoint_test

import (
	"errors"
	"testing"
	"time"

	"github.com/converge-go/converge/store/checkpoint"
)

// CheckAge returns the age, refusing with ErrFuture a Seen more than
// MaxSkew after now, with ErrTooOld an age past maxAge or a zero Seen, and
// accepting the bounds themselves.
func TestCheckAgeRefusesAFutureOrTooOldCheckpoint(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		seen time.Time
		want error
	}{
		{now.Add(-time.Hour), nil},
		{now.Add(-time.Hour - 1), checkpoint.ErrTooOld},
		{now.Add(checkpoint.MaxSkew), nil},
		{now.Add(checkpoint.MaxSkew + 1), checkpoint.ErrFuture},
		{now.AddDate(1, 0, 0), checkpoint.ErrFuture},
		{time.Time{}, checkpoint.ErrTooOld},
	} {
		st := checkpoint.State[int]{Seen: tc.seen}
		age, err := st.CheckAge(now, time.Hour)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("CheckAge of a checkpoint seen at %v: %v, want %v", tc.seen, err, tc.want)
		}
		if age != now.Sub(tc.seen) {
			t.Errorf("CheckAge of a checkpoint seen at %v: age %v, want %v", tc.seen, age, now.Sub(tc.seen))
		}
	}
}
