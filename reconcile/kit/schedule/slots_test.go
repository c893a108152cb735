package schedule

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSlotKeysAreTheSameForASlotDistinctAcrossSlotsAndSortAsTheirSlots(t *testing.T) {
	paris := zone(t, "Europe/Paris")
	s := mustParse(t, "*/20 1-3 * * *", paris)
	from := utc(2025, 3, 29, 0, 0) // across the spring-forward night
	var keys []string
	for range 20 {
		from = s.Next(from)
		key := SlotKey("backups/nightly/", from)
		require.Equal(t, key, SlotKey("backups/nightly/", from.UTC()), "the same slot, however it is written")
		slot, ok := SlotOf("backups/nightly/", key)
		require.True(t, ok)
		require.True(t, slot.Equal(from))
		keys = append(keys, key)
	}
	require.True(t, slices.IsSorted(keys))
	require.Len(t, slices.Compact(slices.Clone(keys)), len(keys))
	require.Equal(t, "backups/nightly/20250329T000000Z", SlotKey("backups/nightly/", time.Date(2025, 3, 29, 1, 0, 0, 0, paris)))
}

func TestSlotOfRefusesKeysNotMadeBySlotKey(t *testing.T) {
	for _, key := range []string{"", "backups/nightly/", "backups/other/20250329T000000Z", "backups/nightly/20250329T000000", "backups/nightly/2025032XT000000Z", "backups/nightly/20250329T000000Z/x"} {
		_, ok := SlotOf("backups/nightly/", key)
		require.False(t, ok, key)
	}
}

func TestAfterDowntimeOverFiveSlotsOnlyTheLatestIsDue(t *testing.T) {
	s := mustParse(t, "@hourly", nil)
	last := utc(2025, 6, 1, 10, 0)
	now := utc(2025, 6, 1, 15, 30) // 11:00 to 15:00 missed
	slot, due := s.Due(last, now)
	require.True(t, due)
	require.Equal(t, utc(2025, 6, 1, 15, 0), slot.UTC())
	_, due = s.Due(slot, now)
	require.False(t, due, "once it has run, nothing is due until the next slot")
	slot, due = s.Due(slot, utc(2025, 6, 1, 16, 0))
	require.True(t, due)
	require.Equal(t, utc(2025, 6, 1, 16, 0), slot.UTC(), "a slot is due at its own instant")
}

func TestWithNothingRunTheLatestSlotIsDueAtOnce(t *testing.T) {
	s := mustParse(t, "0 3 * * *", nil)
	slot, due := s.Due(time.Time{}, utc(2025, 6, 1, 12, 0))
	require.True(t, due)
	require.Equal(t, utc(2025, 6, 1, 3, 0), slot.UTC())
	_, due = s.Due(utc(2025, 6, 1, 12, 0), utc(2025, 6, 1, 12, 0))
	require.False(t, due, "a schedule first seen at noon waits for its first slot")
}

func TestRunningReportsTheFirstChildNotFinished(t *testing.T) {
	finished := func(r Run) bool { return r.Finished }
	_, busy := Running([]Run{{Key: "a", Finished: true}, {Key: "b", Finished: true}}, finished)
	require.False(t, busy)
	_, busy = Running(nil, finished)
	require.False(t, busy)
	r, busy := Running([]Run{{Key: "a", Finished: true}, {Key: "b"}, {Key: "c"}}, finished)
	require.True(t, busy)
	require.Equal(t, "b", r.Key)
}

// hours returns runs at the given hours of one day, named by hour.
func hours(states string) []Run {
	var runs []Run
	for i, c := range states {
		runs = append(runs, Run{
			Key:      fmt.Sprintf("h%02d", i),
			Slot:     utc(2025, 6, 1, i, 0),
			Finished: c != 'r', Succeeded: c == 'o',
		})
	}
	return runs
}

func TestFailingRunsNeverDeleteTheLastGoodOne(t *testing.T) {
	// o: succeeded, f: failed, r: running; newest last.
	runs := hours("oofffffff")
	require.Equal(t, []string{"h00", "h02", "h03", "h04", "h05", "h06"}, Retention{Failed: 2}.Expired(runs),
		"the newest success (h01) stays, however many newer runs failed")
	require.Equal(t, []string{"h02", "h03", "h04", "h05", "h06"}, Retention{Succeeded: 3, Failed: 2}.Expired(runs))
	require.Equal(t, []string{"h00"}, Retention{Succeeded: -5, Failed: 100}.Expired(runs), "Succeeded below 1 counts as 1")
}

func TestRetentionKeepsTheNewestSuccessesAndFailuresAndEveryRunNotFinished(t *testing.T) {
	runs := hours("oforoofro")
	slices.Reverse(runs) // any order
	require.Equal(t, []string{"h00", "h01", "h02", "h04", "h06"}, Retention{Succeeded: 2}.Expired(runs))
	require.Equal(t, []string{"h00", "h01", "h02"}, Retention{Succeeded: 3, Failed: 1}.Expired(runs))
	require.Empty(t, Retention{Succeeded: 10, Failed: 10}.Expired(runs))
	require.Empty(t, Retention{}.Expired(hours("rrr")))
	require.Empty(t, Retention{}.Expired(nil))
}

// Random runs and retentions: what Expired keeps always holds the newest
// success and every run not finished, and as many of the newest of each
// outcome as asked.
func TestRetentionHoldsOnRandomRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		states := make([]byte, rng.IntN(12))
		for i := range states {
			states[i] = "ofr"[rng.IntN(3)]
		}
		runs := hours(string(states))
		r := Retention{Succeeded: rng.IntN(5) - 1, Failed: rng.IntN(5) - 1}
		expired := r.Expired(runs)
		kept := map[byte]int{}
		for i := len(runs) - 1; i >= 0; i-- { // newest first
			gone := slices.Contains(expired, runs[i].Key)
			c := states[i]
			switch {
			case c == 'r':
				require.False(t, gone, "a run not finished is never deleted: %s %+v", states, r)
			case c == 'o' && kept['o'] < max(r.Succeeded, 1), c == 'f' && kept['f'] < max(r.Failed, 0):
				require.False(t, gone, "one of the newest is kept: %s %+v", states, r)
				kept[c]++
			default:
				require.True(t, gone, "one beyond the newest is deleted: %s %+v", states, r)
			}
		}
		require.True(t, slices.IsSorted(expired), "oldest first")
	}
}
