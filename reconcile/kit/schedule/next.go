package schedule

import (
	"math/bits"
	"time"
)

// How the slots of a schedule map to instants, across changes of a zone's
// offset (daylight saving time): a wall clock that jumps forward skips the
// times in between, and one that moves back shows an hour twice. The rule
// is one sentence: an instant is a slot when, at that instant, the wall
// clock reaches or passes a matching minute it has never shown before.
// So a matching minute skipped by a spring-forward jump is moved to the
// end of the jump (with "30 2 * * *" in Europe/Paris, 03:00 on the last
// Sunday of March: the day's run happens, once, however many minutes
// fell in the jump), and a matching minute shown twice after a fall-back
// is a slot the first time only (02:30 CEST, not 02:30 CET). A schedule
// meant to run by elapsed time ("*/15 * * * *" every fifteen minutes
// through the repeated hour too) is read in UTC.
//
// Wall readings are counted in seconds, as Unix time plus the zone's
// offset: wall(u) = u + offset(u). The search for matching minutes then
// runs on a calendar without offsets (UTC's), and reach maps a minute back
// to the instant it is first reached.

// maxOffset bounds the offset of any zone, historical ones included
// (Asia/Manila's local mean time was -15:56).
const maxOffset = 26 * 3600

// Next returns the first slot of s strictly after t, in s's location. It
// returns the zero Time for the zero Schedule, and for a t so late that no
// slot follows within 400 years (the Gregorian calendar repeats then: a
// parsed schedule with a slot has one in every 400 years).
func (s Schedule) Next(t time.Time) time.Time {
	if s.every > 0 {
		return s.nextEvery(t)
	}
	if s.IsZero() {
		return time.Time{}
	}
	m := floorMinute(s.highWater(t.Unix())) + 60
	w, ok := s.nextWall(m)
	if !ok {
		return time.Time{}
	}
	return time.Unix(s.reach(w), 0).In(s.Location())
}

// Prev returns the latest slot of s at or before t, in s's location, or
// the zero Time if there is none within 400 years (or s is zero).
func (s Schedule) Prev(t time.Time) time.Time {
	if s.every > 0 {
		return s.prevEvery(t)
	}
	if s.IsZero() {
		return time.Time{}
	}
	w, ok := s.prevWall(floorMinute(s.highWater(t.Unix())))
	if !ok {
		return time.Time{}
	}
	return time.Unix(s.reach(w), 0).In(s.Location())
}

// highWater returns the latest wall reading shown at or before the instant
// ts: wall(ts), unless the clock moved back since and once showed more.
// Only the offsets of the last 2·maxOffset can make a reading that ts's
// own has not passed.
func (s Schedule) highWater(ts int64) int64 {
	t := time.Unix(ts, 0).In(s.Location())
	_, off := t.Zone()
	hw := ts + int64(off)
	start, _ := t.ZoneBounds()
	for !start.IsZero() && start.Unix() > ts-2*maxOffset {
		last := start.Add(-time.Second) // the previous period's last second
		_, off := last.Zone()
		hw = max(hw, last.Unix()+int64(off))
		start, _ = last.ZoneBounds()
	}
	return hw
}

// reach returns the first instant whose wall reading is w or later: the
// instant showing w, the first of two, or the end of the jump over w.
func (s Schedule) reach(w int64) int64 {
	// Before w-maxOffset every instant reads less than w. Walk the periods
	// of constant offset from there to the first that reaches w.
	t := time.Unix(w-maxOffset, 0).In(s.Location())
	for {
		_, off := t.Zone()
		_, end := t.ZoneBounds()
		if end.IsZero() || end.Unix()+int64(off) > w {
			return max(t.Unix(), w-int64(off))
		}
		t = end
	}
}

// searchYears bounds the calendar searches: the Gregorian calendar, days
// of the week included, repeats every 400 years.
const searchYears = 400

// nextWall returns the first matching minute at or after the wall reading
// w (a whole minute), reading the calendar as UTC's.
func (s Schedule) nextWall(w int64) (int64, bool) {
	t := time.Unix(w, 0).UTC()
	y, mo, d := t.Date()
	h, mi := t.Hour(), t.Minute()
	for limit := y + searchYears; y <= limit; {
		switch {
		case s.month&(1<<mo) == 0 || d > daysIn(y, mo):
			y, mo, d, h, mi = nextMonth(y, mo)
		case !s.dayMatches(y, mo, d):
			d, h, mi = d+1, 0, 0
		default:
			if h, mi = nextHourMinute(s.hour, s.minute, h, mi); h < 24 {
				return time.Date(y, mo, d, h, mi, 0, 0, time.UTC).Unix(), true
			}
			d, h, mi = d+1, 0, 0
		}
	}
	return 0, false
}

// prevWall returns the latest matching minute at or before the wall
// reading w (a whole minute).
func (s Schedule) prevWall(w int64) (int64, bool) {
	t := time.Unix(w, 0).UTC()
	y, mo, d := t.Date()
	h, mi := t.Hour(), t.Minute()
	for limit := y - searchYears; y >= limit; {
		switch {
		case s.month&(1<<mo) == 0 || d < 1:
			y, mo, d, h, mi = prevMonth(y, mo)
		case !s.dayMatches(y, mo, d):
			d, h, mi = d-1, 23, 59
		default:
			if h, mi = prevHourMinute(s.hour, s.minute, h, mi); h >= 0 {
				return time.Date(y, mo, d, h, mi, 0, 0, time.UTC).Unix(), true
			}
			d, h, mi = d-1, 23, 59
		}
	}
	return 0, false
}

// dayMatches applies the day rule (see Parse) to a date.
func (s Schedule) dayMatches(y int, mo time.Month, d int) bool {
	domOK := s.dom&(1<<d) != 0
	dowOK := s.dow&(1<<time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).Weekday()) != 0
	if s.domStar || s.dowStar {
		return domOK && dowOK
	}
	return domOK || dowOK
}

// nextHourMinute returns the first allowed (hour, minute) at or after
// (h, mi) on one day, or an hour of 24 if none is left.
func nextHourMinute(hours, minutes uint64, h, mi int) (int, int) {
	for ; h < 24; h, mi = h+1, 0 {
		if hours&(1<<h) == 0 {
			continue
		}
		if rest := minutes >> mi << mi; rest != 0 {
			return h, bits.TrailingZeros64(rest)
		}
	}
	return 24, 0
}

// prevHourMinute returns the latest allowed (hour, minute) at or before
// (h, mi) on one day, or an hour of -1 if none is left.
func prevHourMinute(hours, minutes uint64, h, mi int) (int, int) {
	for ; h >= 0; h, mi = h-1, 59 {
		if hours&(1<<h) == 0 {
			continue
		}
		if upTo := minutes & (1<<(mi+1) - 1); upTo != 0 {
			return h, bits.Len64(upTo) - 1
		}
	}
	return -1, 0
}

func nextMonth(y int, mo time.Month) (int, time.Month, int, int, int) {
	if mo == time.December {
		return y + 1, time.January, 1, 0, 0
	}
	return y, mo + 1, 1, 0, 0
}

// prevMonth returns the last minute of the month before mo.
func prevMonth(y int, mo time.Month) (int, time.Month, int, int, int) {
	if mo == time.January {
		return y - 1, time.December, 31, 23, 59
	}
	return y, mo - 1, daysIn(y, mo-1), 23, 59
}

// floorMinute rounds a wall reading down to its minute.
func floorMinute(w int64) int64 {
	r := w % 60
	if r < 0 {
		r += 60
	}
	return w - r
}
