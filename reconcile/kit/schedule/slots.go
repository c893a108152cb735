package schedule

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// slotLayout writes a slot in keys: UTC to the second, fixed width, so
// that the keys of one prefix sort as their slots do (years 1000 to 9999).
const slotLayout = "20060102T150405Z"

// SlotKey returns the key of the child made for slot: prefix followed by
// the slot in UTC to the second, as in "backups/nightly/20250330T010000Z".
// The same slot always gives the same key, so creating the child with a
// create-only write (store.Create) makes it at most once, whoever tries and
// however often; and the keys under one prefix sort as their slots.
// prefix is used as given: end it with the separator the keys use.
func SlotKey(prefix string, slot time.Time) string {
	return prefix + slot.UTC().Format(slotLayout)
}

// SlotOf returns the slot of a key made by SlotKey with prefix, and false
// if key is not one.
func SlotOf(prefix, key string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok || len(rest) != len(slotLayout) {
		return time.Time{}, false
	}
	t, err := time.Parse(slotLayout, rest)
	return t, err == nil
}

// Due returns the slot to run now, given last, the newest slot already run
// (one whose child exists, whatever became of it): the latest slot after
// last and at or before now. After downtime over several slots, only the
// latest is due: at most one catch-up, never a burst of missed runs. It
// reports false if no slot has come since last. A zero last makes the
// latest slot up to now due, so a new schedule runs at once; to wait for
// its first slot instead, pass the time the schedule was first seen.
func (s Schedule) Due(last, now time.Time) (time.Time, bool) {
	slot := s.Prev(now)
	if slot.IsZero() || (!last.IsZero() && !slot.After(last)) {
		return time.Time{}, false
	}
	return slot, true
}

// Running returns the first of children that finished says is not
// finished, and false if every child is. A schedule that runs at most one
// child at a time makes the child of a due slot only once Running
// reports false. finished is called once per child, in order, until one
// is not finished.
func Running[C any](children []C, finished func(C) bool) (C, bool) {
	for _, c := range children {
		if !finished(c) {
			return c, true
		}
	}
	var zero C
	return zero, false
}

// Run is a child made for one slot, as retention sees it.
type Run struct {
	Key  string
	Slot time.Time
	// Finished says the run has ended, and Succeeded that it ended well.
	// A run not finished is never deleted.
	Finished, Succeeded bool
}

// Retention says how many finished runs of a schedule to keep. The zero
// Retention keeps the newest success alone.
type Retention struct {
	// Succeeded is how many of the newest successful runs to keep. It is
	// at least 1 whatever its value: the newest success is never deleted,
	// however many newer runs failed (a value below 1 counts as 1).
	Succeeded int
	// Failed is how many of the newest failed runs to keep (a value below
	// 0 counts as 0).
	Failed int
}

// Expired returns the keys of the runs to delete to keep what r says,
// oldest slot first: the successful runs beyond the newest r.Succeeded
// (at least one) and the failed runs beyond the newest r.Failed. A run
// not finished is never among them. runs may be in any order; it is not
// changed.
func (r Retention) Expired(runs []Run) []string {
	byNewest := slices.Clone(runs)
	slices.SortStableFunc(byNewest, func(a, b Run) int { return b.Slot.Compare(a.Slot) })
	keepOK, keepFailed := max(r.Succeeded, 1), max(r.Failed, 0)
	var expired []Run
	for _, run := range byNewest {
		switch {
		case !run.Finished:
		case run.Succeeded && keepOK > 0:
			keepOK--
		case !run.Succeeded && keepFailed > 0:
			keepFailed--
		default:
			expired = append(expired, run)
		}
	}
	slices.SortStableFunc(expired, func(a, b Run) int {
		return cmp.Or(a.Slot.Compare(b.Slot), strings.Compare(a.Key, b.Key))
	})
	keys := make([]string, len(expired))
	for i, run := range expired {
		keys[i] = run.Key
	}
	return keys
}
