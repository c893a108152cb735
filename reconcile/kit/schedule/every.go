package schedule

import (
	"fmt"
	"time"
)

// Every returns the interval schedule of d: its slots are the instants
// that are a whole number of d since the Unix epoch (with d = 6h: 00:00,
// 06:00, 12:00 and 18:00 UTC), the same in every process and after every
// restart, so SlotKey, Due and Retention work on them as on a cron
// schedule's, and daylight saving time never moves them. d must be a
// positive whole number of seconds (SlotKey's resolution): any other is
// an error matching ErrInvalid. Its String is "@every D".
func Every(d time.Duration) (Schedule, error) {
	s, err := every(d, time.UTC, "@every "+d.String())
	if err != nil {
		return Schedule{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return s, nil
}

func every(d time.Duration, loc *time.Location, spec string) (Schedule, error) {
	if d <= 0 || d%time.Second != 0 {
		return Schedule{}, fmt.Errorf("@every %v: the interval must be a positive whole number of seconds", d)
	}
	return Schedule{every: int64(d / time.Second), loc: loc, spec: spec}, nil
}

// prevEvery is Prev for an interval schedule: the latest multiple of the
// interval at or before t.
func (s Schedule) prevEvery(t time.Time) time.Time {
	u := t.Unix()
	q := u / s.every
	if u%s.every < 0 {
		q-- // floor, before the epoch too
	}
	return time.Unix(q*s.every, 0).In(s.Location())
}

// nextEvery is Next for an interval schedule: the first multiple of the
// interval strictly after t.
func (s Schedule) nextEvery(t time.Time) time.Time {
	return s.prevEvery(t).Add(time.Duration(s.every) * time.Second)
}
