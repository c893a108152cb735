package schedule

import (
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
)

// TestAnIntervalSchedulesSlotsAreTheMultiplesOfItsIntervalSinceTheEpoch:
// over random intervals and instants (before the epoch too), Prev(t) is
// the latest multiple of the interval at or before t and Next(t) the
// first strictly after, whatever the location or a daylight saving
// change; Parse("@every D") and Every agree.
func TestAnIntervalSchedulesSlotsAreTheMultiplesOfItsIntervalSinceTheEpoch(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		d := time.Duration(1+rng.IntN(200000)) * time.Second
		s, err := Every(d)
		require.NoError(t, err)
		parsed, err := Parse("CRON_TZ=Europe/Paris @every "+d.String(), nil)
		require.NoError(t, err)
		require.Equal(t, d, parsed.Interval())
		at := time.Unix(rng.Int64N(4e9)-1e9, rng.Int64N(1e9)).In(paris)
		for _, sch := range []Schedule{s, parsed} {
			prev, next := sch.Prev(at), sch.Next(at)
			require.Zero(t, prev.Unix()%int64(d/time.Second), "%v at %v", d, at)
			require.False(t, prev.After(at))
			require.True(t, next.After(at))
			require.Equal(t, d, next.Sub(prev))
			require.Equal(t, prev, sch.Prev(prev), "a slot is its own Prev")
		}
	}
}

// TestAnIntervalScheduleIsDueOnceAfterDowntimeAndKeysItsSlots: Due,
// SlotKey and SlotOf work on interval slots as on cron ones: after
// downtime over many slots only the latest is due, and each slot has
// its own key, read back.
func TestAnIntervalScheduleIsDueOnceAfterDowntimeAndKeysItsSlots(t *testing.T) {
	s, err := Every(90 * time.Second)
	require.NoError(t, err)
	start := time.Date(2025, 3, 30, 0, 0, 0, 0, time.UTC)
	last := s.Prev(start)
	slot, due := s.Due(last, last.Add(10*time.Minute))
	require.True(t, due)
	require.Equal(t, last.Add(9*time.Minute), slot, "the latest of six missed slots, once")
	_, due = s.Due(slot, slot.Add(89*time.Second))
	require.False(t, due)
	key := SlotKey("backups/often/", slot)
	back, ok := SlotOf("backups/often/", key)
	require.True(t, ok)
	require.True(t, back.Equal(slot))
}

// TestABadIntervalIsErrInvalid: an interval not a positive whole number
// of seconds, or not a duration, is refused.
func TestABadIntervalIsErrInvalid(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second, 1500 * time.Millisecond} {
		_, err := Every(d)
		require.ErrorIs(t, err, ErrInvalid, d)
		require.ErrorIs(t, err, store.ErrInvalid, d)
	}
	for _, spec := range []string{"@every", "@every 1.5s", "@every soon", "@every -1m"} {
		_, err := Parse(spec, nil)
		require.ErrorIs(t, err, ErrInvalid, spec)
	}
}

// TestAnIntervalScheduleWakesItsKeyAtEachSlot: a Source wakes a key of
// an interval schedule at each of its slots.
func TestAnIntervalScheduleWakesItsKeyAtEachSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := Every(45 * time.Second)
		require.NoError(t, err)
		e := &entries{list: []Entry{{Key: "often", Schedule: s}}}
		w := &wakes{}
		stop := run(newSource(t, e.get, Options{}), w)
		advance(10*time.Minute + time.Second)
		synctest.Wait()
		require.NoError(t, stop())
		got := w.of("often")
		require.Len(t, got, 13) // 10 minutes from 00:00: 45 s, 90 s, ... 585 s
		for _, at := range got {
			require.Zero(t, at.Unix()%45)
		}
	})
}
