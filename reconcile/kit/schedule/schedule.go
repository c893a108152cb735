package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/converge-go/converge/internal/invalid"
	"github.com/converge-go/converge/internal/running"
)

// ErrInvalid matches every error Parse and NewSource return for bad input,
// and the error of a Start of the zero Source.
// errors.Is matches it with the ErrInvalid of every converge package
// (store.ErrInvalid included).
var ErrInvalid error = invalid.New("schedule")

// ErrAlreadyRunning matches the error of a Start while another Start of
// the same Source runs, and the ErrAlreadyRunning of every converge
// package (reconcile.ErrAlreadyRunning included).
var ErrAlreadyRunning error = running.New("schedule")

// Schedule is a parsed schedule: the instants at which something is due,
// its slots. A cron schedule's slots are the minutes of a wall clock in
// one time zone; an interval schedule's (Every, "@every 90m") are the
// multiples of its interval since the Unix epoch. Next, Prev, Due,
// SlotKey and Retention work alike on both. A Schedule is a small value,
// safe to copy, compare with == and use from several goroutines. The
// zero Schedule has no slots: Next and Prev return the zero Time and Due
// reports nothing due.
type Schedule struct {
	every                         int64  // an interval schedule's interval in seconds; 0 for cron
	minute, hour, dom, month, dow uint64 // one bit per allowed value
	// domStar and dowStar record a day field that begins with '*': see
	// the day rule in Parse.
	domStar, dowStar bool
	loc              *time.Location
	spec             string
}

// Parse parses a cron spec read in loc (UTC if loc is nil):
//
//	minute hour day-of-month month day-of-week
//
// Each field is '*', a value, a range "a-b", or a list of those separated
// by commas; '*' and ranges take a step ("*/15", "8-18/2"), and "a/n" means
// "a-max/n". Minutes are 0-59, hours 0-23, days of the month 1-31, months
// 1-12 or jan-dec, days of the week 0-7 (0 and 7 are Sunday) or sun-sat;
// names are case-insensitive. The day rule is Vixie cron's: if both day
// fields are restricted (neither begins with '*'), a day matches when
// either does ("0 0 1 * mon" runs on the 1st and on every Monday);
// otherwise it must match both.
//
// Instead of the five fields, spec may be @yearly (or @annually),
// @monthly, @weekly, @daily (or @midnight) or @hourly, or "@every D" with
// D a Go duration of whole seconds ("@every 90s", "@every 6h"): an
// interval schedule, as Every makes. A leading
// "CRON_TZ=Zone " (or "TZ=Zone ") reads the spec in that IANA zone
// instead of loc: "CRON_TZ=Europe/Paris 0 3 * * *".
//
// A spec that cannot be parsed, names an unknown zone, or has no slot at
// all ("0 0 30 2 *": February has no 30th) returns an error matching
// ErrInvalid whose message names the field at fault.
func Parse(spec string, loc *time.Location) (Schedule, error) {
	s, err := parse(spec, loc)
	if err != nil {
		return Schedule{}, fmt.Errorf("%w: %q: %w", ErrInvalid, spec, err)
	}
	return s, nil
}

var descriptors = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

func parse(spec string, loc *time.Location) (Schedule, error) {
	text := strings.TrimSpace(spec)
	if loc == nil {
		loc = time.UTC
	}
	for _, prefix := range []string{"CRON_TZ=", "TZ="} { // an interval ignores it
		if rest, ok := strings.CutPrefix(text, prefix); ok {
			name, fields := rest, ""
			if i := strings.IndexAny(rest, " \t"); i >= 0 {
				name, fields = rest[:i], rest[i:]
			}
			l, err := time.LoadLocation(name)
			if err != nil || name == "" {
				return Schedule{}, fmt.Errorf("time zone %q is unknown", name)
			}
			loc, text = l, strings.TrimSpace(fields)
			break
		}
	}
	if f := strings.Fields(text); len(f) > 0 && strings.EqualFold(f[0], "@every") {
		if len(f) != 2 {
			return Schedule{}, fmt.Errorf("@every takes one duration, as in \"@every 90s\"")
		}
		d, err := time.ParseDuration(f[1])
		if err != nil {
			return Schedule{}, fmt.Errorf("@every: %w", err)
		}
		return every(d, loc, spec)
	}
	if strings.HasPrefix(text, "@") {
		d, ok := descriptors[strings.ToLower(text)]
		if !ok {
			return Schedule{}, fmt.Errorf("%s is not one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly", text)
		}
		text = d
	}
	fields := strings.Fields(text)
	if len(fields) != 5 {
		return Schedule{}, fmt.Errorf("%d fields, want 5: minute hour day-of-month month day-of-week", len(fields))
	}
	s := Schedule{loc: loc, spec: spec}
	var err error
	for i, dst := range []*uint64{&s.minute, &s.hour, &s.dom, &s.month, &s.dow} {
		if *dst, err = fieldSpecs[i].parse(fields[i]); err != nil {
			return Schedule{}, err
		}
	}
	s.domStar, s.dowStar = strings.HasPrefix(fields[2], "*"), strings.HasPrefix(fields[4], "*")
	if err := s.checkDays(); err != nil {
		return Schedule{}, err
	}
	return s, nil
}

// checkDays refuses a schedule whose days of the month never fall in its
// months, the only way five valid fields can have no slot.
func (s Schedule) checkDays() error {
	if !s.domStar && !s.dowStar {
		return nil // any day of the week matches too
	}
	for m := time.January; m <= time.December; m++ {
		if s.month&(1<<m) != 0 && s.dom&(1<<(daysIn(2000, m)+1)-1) != 0 {
			return nil
		}
	}
	return fmt.Errorf("day-of-month: no day listed falls in the months listed")
}

// String returns the spec s was parsed from.
func (s Schedule) String() string { return s.spec }

// Location returns the time zone s is read in (UTC for the zero Schedule).
func (s Schedule) Location() *time.Location {
	if s.loc == nil {
		return time.UTC
	}
	return s.loc
}

// IsZero reports whether s is the zero Schedule, which has no slots.
func (s Schedule) IsZero() bool { return s.minute == 0 && s.every == 0 }

// Interval returns an interval schedule's interval, 0 for a cron one.
func (s Schedule) Interval() time.Duration { return time.Duration(s.every) * time.Second }

// daysIn returns the number of days of month m of year y.
func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
