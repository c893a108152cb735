package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func mustParse(t *testing.T, spec string, loc *time.Location) Schedule {
	t.Helper()
	s, err := Parse(spec, loc)
	require.NoError(t, err)
	return s
}

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

func utc(y int, mo time.Month, d, h, mi int) time.Time {
	return time.Date(y, mo, d, h, mi, 0, 0, time.UTC)
}

// slots returns the n slots after from, in UTC.
func slots(s Schedule, from time.Time, n int) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		from = s.Next(from)
		out[i] = from.UTC()
	}
	return out
}

func TestNextIsTheFirstSlotStrictlyAfterT(t *testing.T) {
	s := mustParse(t, "30 2 * * *", nil)
	slot := utc(2025, 6, 1, 2, 30)
	require.Equal(t, slot, s.Next(slot.Add(-time.Nanosecond)).UTC())
	require.Equal(t, utc(2025, 6, 2, 2, 30), s.Next(slot).UTC())
	require.Equal(t, slot, s.Next(utc(2025, 5, 31, 2, 31)).UTC())
	require.Equal(t, []time.Time{utc(2025, 1, 1, 0, 0), utc(2025, 2, 1, 0, 0), utc(2025, 3, 1, 0, 0)},
		slots(mustParse(t, "@monthly", nil), utc(2024, 12, 31, 23, 59), 3))
	require.Equal(t, []time.Time{utc(2025, 1, 1, 0, 0), utc(2026, 1, 1, 0, 0)},
		slots(mustParse(t, "@yearly", nil), utc(2024, 6, 1, 0, 0), 2))
	paris := zone(t, "Europe/Paris")
	next := mustParse(t, "CRON_TZ=Europe/Paris 0 3 * * *", nil).Next(utc(2025, 6, 1, 12, 0))
	require.Equal(t, paris.String(), next.Location().String(), "the slot is in the schedule's zone")
	require.Equal(t, utc(2025, 6, 2, 1, 0), next.UTC()) // 03:00 CEST
}

func TestPrevIsTheLatestSlotAtOrBeforeT(t *testing.T) {
	s := mustParse(t, "30 2 * * *", nil)
	slot := utc(2025, 6, 1, 2, 30)
	require.Equal(t, slot, s.Prev(slot).UTC())
	require.Equal(t, slot, s.Prev(slot.Add(23*time.Hour)).UTC())
	require.Equal(t, utc(2025, 5, 31, 2, 30), s.Prev(slot.Add(-time.Nanosecond)).UTC())
	require.Equal(t, utc(2024, 10, 1, 0, 0), mustParse(t, "0 0 1 */3 *", nil).Prev(utc(2025, 1, 1, 0, 0).Add(-time.Second)).UTC()) // jan, apr, jul, oct
}

func TestTheZeroScheduleHasNoSlots(t *testing.T) {
	var s Schedule
	require.True(t, s.IsZero())
	require.True(t, s.Next(time.Now()).IsZero())
	require.True(t, s.Prev(time.Now()).IsZero())
	_, due := s.Due(time.Time{}, time.Now())
	require.False(t, due)
	require.Equal(t, "", s.String())
}

// Europe/Paris, 2025-03-30: at 02:00 CET clocks jump to 03:00 CEST.
func TestASlotSkippedBySpringForwardRunsOnceAtTheEndOfTheJump(t *testing.T) {
	paris := zone(t, "Europe/Paris")
	jump := utc(2025, 3, 30, 1, 0) // 02:00 CET = 03:00 CEST
	require.Equal(t, []time.Time{utc(2025, 3, 29, 1, 30), jump, utc(2025, 3, 31, 0, 30)},
		slots(mustParse(t, "30 2 * * *", paris), utc(2025, 3, 28, 12, 0), 3), "02:30 CET, then 03:00 CEST, then 02:30 CEST")
	require.Equal(t, []time.Time{utc(2025, 3, 30, 0, 45), jump, jump.Add(15 * time.Minute)},
		slots(mustParse(t, "*/15 * * * *", paris), utc(2025, 3, 30, 0, 40), 3), "the four skipped quarters run once, at 03:00")
	require.Equal(t, jump, mustParse(t, "0 3 * * *", paris).Next(utc(2025, 3, 29, 12, 0)).UTC())
	require.Equal(t, jump, mustParse(t, "59 2 * * *", paris).Prev(jump).UTC())
	require.Equal(t, utc(2025, 3, 29, 1, 59), mustParse(t, "59 2 * * *", paris).Prev(jump.Add(-time.Second)).UTC())

	// America/Sao_Paulo, 2018-11-04: midnight did not exist (00:00 -03
	// became 01:00 -02): the day's @daily ran at 01:00.
	saoPaulo := zone(t, "America/Sao_Paulo")
	require.Equal(t, []time.Time{utc(2018, 11, 3, 3, 0), utc(2018, 11, 4, 3, 0), utc(2018, 11, 5, 2, 0)},
		slots(mustParse(t, "@daily", saoPaulo), utc(2018, 11, 2, 12, 0), 3))

	// Australia/Lord_Howe moves by half an hour: 02:00 became 02:30 on
	// 2025-10-05.
	lordHowe := zone(t, "Australia/Lord_Howe")
	require.Equal(t, utc(2025, 10, 4, 15, 30), mustParse(t, "15 2 * * *", lordHowe).Next(utc(2025, 10, 4, 0, 0)).UTC())
}

// Europe/Paris, 2025-10-26: at 03:00 CEST clocks go back to 02:00 CET.
func TestASlotShownTwiceByFallBackRunsOnce(t *testing.T) {
	paris := zone(t, "Europe/Paris")
	s := mustParse(t, "30 2 * * *", paris)
	require.Equal(t, []time.Time{utc(2025, 10, 26, 0, 30), utc(2025, 10, 27, 1, 30)},
		slots(s, utc(2025, 10, 25, 12, 0), 2), "02:30 CEST, not 02:30 CET, then 02:30 CET the next day")
	require.Equal(t, utc(2025, 10, 27, 1, 30), s.Next(utc(2025, 10, 26, 1, 30).Add(-time.Second)).UTC(),
		"from the second pass, the next slot is the next day's")
	require.Equal(t, utc(2025, 10, 26, 0, 30), s.Prev(utc(2025, 10, 26, 1, 45)).UTC(), "02:45 CET: the day's slot has run")
	require.Equal(t, utc(2025, 10, 25, 1, 0), mustParse(t, "0 3 * * *", paris).Prev(utc(2025, 10, 26, 1, 45)).UTC(),
		"02:45 CET: 03:00 has not come yet today")
	require.Equal(t, []time.Time{utc(2025, 10, 26, 0, 0), utc(2025, 10, 26, 2, 0)},
		slots(mustParse(t, "@hourly", paris), utc(2025, 10, 25, 23, 59), 2), "02:00 CEST, 03:00 CET: 02:00 CET was shown before")
	require.Equal(t, []time.Time{utc(2025, 10, 26, 0, 0), utc(2025, 10, 26, 1, 0), utc(2025, 10, 26, 2, 0)},
		slots(mustParse(t, "@hourly", nil), utc(2025, 10, 25, 23, 59), 3), "in UTC, every hour")

	// America/Sao_Paulo, 2019-02-16: midnight -02 became 23:00 -03.
	saoPaulo := zone(t, "America/Sao_Paulo")
	require.Equal(t, []time.Time{utc(2019, 2, 17, 1, 30), utc(2019, 2, 18, 2, 30)},
		slots(mustParse(t, "30 23 * * *", saoPaulo), utc(2019, 2, 16, 12, 0), 2))
}

// A slot that comes once in years is found: February 29th, which 2100
// skips.
func TestRareSlotsAreFoundYearsAhead(t *testing.T) {
	s := mustParse(t, "0 0 29 2 *", nil)
	require.Equal(t, utc(2104, 2, 29, 0, 0), s.Next(utc(2096, 3, 1, 0, 0)).UTC())
	require.Equal(t, utc(2096, 2, 29, 0, 0), s.Prev(utc(2104, 2, 28, 0, 0)).UTC())
	s = mustParse(t, "0 0 29 2 mon", nil) // the 29th, or any Monday of February
	require.Equal(t, utc(2025, 2, 3, 0, 0), s.Next(utc(2025, 1, 1, 0, 0)).UTC())
}
