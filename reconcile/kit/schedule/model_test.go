package schedule

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The reference: walk every minute of UTC, read the wall clock of the zone
// at each, and call the instant a slot when the clock reaches or passes a
// matching minute it has never shown before. Next and Prev, which jump
// from slot to slot, must find exactly the reference's slots, and from
// any instant the nearest one.

// wallFields is a wall minute as the matcher reads it.
type wallFields struct{ minute, hour, day, weekday, month int8 }

// refMatches is an independent reading of the fields and the day rule.
func refMatches(s Schedule, f wallFields) bool {
	in := func(b uint64, v int8) bool { return b&(1<<v) != 0 }
	dom, dow := in(s.dom, f.day), in(s.dow, f.weekday)
	day := dom && dow
	if !s.domStar && !s.dowStar {
		day = dom || dow
	}
	return in(s.minute, f.minute) && in(s.hour, f.hour) && in(s.month, f.month) && day
}

// world is one zone over a span of minutes: the wall reading of every UTC
// minute, and the fields of every wall minute the span can show.
type world struct {
	from   int64   // the first UTC minute
	walls  []int64 // wall reading of from + 60·i
	wall0  int64   // the first wall minute of fields
	fields []wallFields
}

func newWorld(loc *time.Location, from, to time.Time) *world {
	w := &world{from: from.Unix()}
	for u := from.Unix(); u < to.Unix(); u += 60 {
		_, off := time.Unix(u, 0).In(loc).Zone()
		w.walls = append(w.walls, u+int64(off))
	}
	lo, hi := slices.Min(w.walls), slices.Max(w.walls)
	w.wall0 = lo
	for m := lo; m <= hi; m += 60 {
		c := time.Unix(m, 0).UTC()
		w.fields = append(w.fields, wallFields{int8(c.Minute()), int8(c.Hour()), int8(c.Day()), int8(c.Weekday()), int8(c.Month())})
	}
	return w
}

// slots returns the reference's slots of s, as Unix seconds.
func (w *world) slots(s Schedule) []int64 {
	var out []int64
	hw := w.walls[0] - 60 // the clock starts at the span's first minute
	for i, wall := range w.walls {
		for m := hw + 60; m <= wall; m += 60 {
			if refMatches(s, w.fields[(m-w.wall0)/60]) {
				out = append(out, w.from+60*int64(i))
				break
			}
		}
		hw = max(hw, wall)
	}
	return out
}

func TestNextAndPrevAgreeWithAMinuteByMinuteReference(t *testing.T) {
	specs := []string{
		"*/15 * * * *", "30 2 * * *", "0 0 * * *", "@hourly", "59 1 * * 0", "0 0 1,15 * mon",
		"0 3 29 2 *", "*/7 1-3 * * *", "30 0 * 3,10 sun", "0,30 2 * * *", "45 23 * * 6",
	}
	zones := []struct {
		name     string
		from, to time.Time
	}{
		{"Europe/Paris", utc(2024, 1, 1, 0, 0), utc(2027, 1, 1, 0, 0)},
		{"America/New_York", utc(2025, 1, 1, 0, 0), utc(2027, 1, 1, 0, 0)},
		{"Australia/Lord_Howe", utc(2025, 1, 1, 0, 0), utc(2026, 1, 1, 0, 0)}, // moves by 30 minutes
		{"America/Sao_Paulo", utc(2018, 1, 1, 0, 0), utc(2019, 7, 1, 0, 0)},   // at midnight, its last changes
		{"UTC", utc(2025, 1, 1, 0, 0), utc(2026, 1, 1, 0, 0)},
	}
	if testing.Short() {
		zones = zones[:2]
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, z := range zones {
		loc := zone(t, z.name)
		w := newWorld(loc, z.from, z.to)
		for _, spec := range append(specs, "* * * * *") {
			t.Run(fmt.Sprintf("%s/%s", z.name, spec), func(t *testing.T) {
				s := mustParse(t, spec, loc)
				all := w.slots(s)
				if spec != "* * * * *" {
					checkChain(t, s, all, z.from)
				} else { // too many to chain: the hours around each offset change
					for _, c := range offsetChanges(loc, z.from, z.to) {
						lo, hi := c.Add(-3*time.Hour), c.Add(3*time.Hour)
						i, _ := slices.BinarySearch(all, lo.Unix())
						j, _ := slices.BinarySearch(all, hi.Unix())
						checkChain(t, s, all[i:j], lo)
					}
				}
				checkRandomInstants(t, s, all, w, rng)
			})
		}
	}
}

// offsetChanges returns the instants in [from, to) at which loc's offset
// changes.
func offsetChanges(loc *time.Location, from, to time.Time) []time.Time {
	var out []time.Time
	for t := from.In(loc); ; {
		_, end := t.ZoneBounds()
		if end.IsZero() || !end.Before(to) {
			return out
		}
		out = append(out, end)
		t = end
	}
}

// checkChain follows Next from from through every reference slot, and
// Prev back through them.
func checkChain(t *testing.T, s Schedule, want []int64, from time.Time) {
	at := from.Add(-time.Second) // a slot at the span's first minute counts
	for i, slot := range want {
		next := s.Next(at)
		if next.Unix() != slot {
			t.Fatalf("slot %d: Next(%v) = %v, want %v", i, at.UTC(), next.UTC(), time.Unix(slot, 0).UTC())
		}
		if prev := s.Prev(next); !prev.Equal(next) {
			t.Fatalf("Prev(%v) = %v, want the slot itself", next.UTC(), prev.UTC())
		}
		if i > 0 {
			if prev := s.Prev(next.Add(-time.Second)); prev.Unix() != want[i-1] {
				t.Fatalf("Prev(%v) = %v, want %v", next.Add(-time.Second).UTC(), prev.UTC(), time.Unix(want[i-1], 0).UTC())
			}
		}
		at = next
	}
}

// checkRandomInstants asks Next and Prev from instants at random seconds
// of the span (the first day and the last excepted: the reference knows
// nothing before or after them).
func checkRandomInstants(t *testing.T, s Schedule, all []int64, w *world, rng *rand.Rand) {
	lo, hi := w.from+86400, w.from+60*int64(len(w.walls))-86400
	for range 1000 {
		u := lo + rng.Int64N(hi-lo)
		ts := time.Unix(u, rng.Int64N(1e9))
		if i, _ := slices.BinarySearch(all, u+1); i < len(all) { // the first slot after ts
			if next := s.Next(ts); next.Unix() != all[i] {
				t.Fatalf("Next(%v) = %v, want %v", ts.UTC(), next.UTC(), time.Unix(all[i], 0).UTC())
			}
		}
		j, found := slices.BinarySearch(all, u)
		if !found {
			j-- // the latest slot before u
		}
		if j >= 0 {
			if prev := s.Prev(ts); prev.Unix() != all[j] {
				t.Fatalf("Prev(%v) = %v, want %v", ts.UTC(), prev.UTC(), time.Unix(all[j], 0).UTC())
			}
		}
	}
}
