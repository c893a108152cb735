package schedule

import (
	"fmt"
	"testing"
	"time"
	_ "time/tzdata" // the zones of the tests, whatever the host has

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
)

// set returns the bits of values.
func set(values ...int) uint64 {
	var b uint64
	for _, v := range values {
		b |= 1 << v
	}
	return b
}

// span returns the bits of lo..hi stepping by step.
func span(lo, hi, step int) uint64 {
	var b uint64
	for v := lo; v <= hi; v += step {
		b |= 1 << v
	}
	return b
}

func TestParseReadsEveryFormOfEveryField(t *testing.T) {
	for _, tc := range []struct {
		spec                          string
		minute, hour, dom, month, dow uint64
	}{
		{"* * * * *", span(0, 59, 1), span(0, 23, 1), span(1, 31, 1), span(1, 12, 1), span(0, 6, 1)},
		{"0 3 * * *", set(0), set(3), span(1, 31, 1), span(1, 12, 1), span(0, 6, 1)},
		{"*/15 8-18/2 1,15 jan-mar,DEC mon-fri", set(0, 15, 30, 45), set(8, 10, 12, 14, 16, 18), set(1, 15), set(1, 2, 3, 12), span(1, 5, 1)},
		{"5/20 22 10-12 6 7", set(5, 25, 45), set(22), set(10, 11, 12), set(6), set(0)},
		{"0 0 * * 5-7", set(0), set(0), span(1, 31, 1), span(1, 12, 1), set(0, 5, 6)},
		{"0 0 * * 0-7/2", set(0), set(0), span(1, 31, 1), span(1, 12, 1), set(0, 2, 4, 6)},
		{"0 0 * * Sun,SAT", set(0), set(0), span(1, 31, 1), span(1, 12, 1), set(0, 6)},
		{"59 23 31 12 *", set(59), set(23), set(31), set(12), span(0, 6, 1)},
		{"@hourly", set(0), span(0, 23, 1), span(1, 31, 1), span(1, 12, 1), span(0, 6, 1)},
		{"@daily", set(0), set(0), span(1, 31, 1), span(1, 12, 1), span(0, 6, 1)},
		{"@midnight", set(0), set(0), span(1, 31, 1), span(1, 12, 1), span(0, 6, 1)},
		{"@weekly", set(0), set(0), span(1, 31, 1), span(1, 12, 1), set(0)},
		{"@monthly", set(0), set(0), set(1), span(1, 12, 1), span(0, 6, 1)},
		{"@yearly", set(0), set(0), set(1), set(1), span(0, 6, 1)},
		{"@annually", set(0), set(0), set(1), set(1), span(0, 6, 1)},
		{"  0\t3  *  * *  ", set(0), set(3), span(1, 31, 1), span(1, 12, 1), span(0, 6, 1)},
	} {
		s, err := Parse(tc.spec, nil)
		require.NoError(t, err, tc.spec)
		got := [5]uint64{s.minute, s.hour, s.dom, s.month, s.dow}
		require.Equal(t, [5]uint64{tc.minute, tc.hour, tc.dom, tc.month, tc.dow}, got, tc.spec)
		require.Equal(t, tc.spec, s.String())
	}
}

func TestParseReadsTheTimeZoneFromThePrefixOrTheLocation(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	s, err := Parse("CRON_TZ=Europe/Paris 0 3 * * *", nil)
	require.NoError(t, err)
	require.Equal(t, "Europe/Paris", s.Location().String())
	s, err = Parse("TZ=America/New_York\t@daily", paris) // the prefix wins
	require.NoError(t, err)
	require.Equal(t, "America/New_York", s.Location().String())
	s, err = Parse("0 3 * * *", paris)
	require.NoError(t, err)
	require.Equal(t, paris, s.Location())
	s, err = Parse("0 3 * * *", nil)
	require.NoError(t, err)
	require.Equal(t, time.UTC, s.Location())
	require.Equal(t, time.UTC, Schedule{}.Location())
}

// Each bad spec is refused with an error matching ErrInvalid and
// store.ErrInvalid whose message names the field at fault.
func TestBadSpecsAreErrInvalidNamingTheField(t *testing.T) {
	for spec, want := range map[string]string{
		"":                            "0 fields, want 5",
		"* * * *":                     "4 fields, want 5",
		"* * * * * *":                 "6 fields, want 5",
		"60 * * * *":                  "minute: 60 is out of range 0-59",
		"-1 * * * *":                  `minute: "" is not a number`,
		"x * * * *":                   `minute: "x" is not a number`,
		"*/0 * * * *":                 `minute: step "0" is not a positive number`,
		"*/x * * * *":                 `minute: step "x" is not a positive number`,
		"1,,2 * * * *":                "minute: empty list item",
		"* 24 * * *":                  "hour: 24 is out of range 0-23",
		"* 22-2 * * *":                "hour: range 22-2 is backwards",
		"* * 0 * *":                   "day-of-month: 0 is out of range 1-31",
		"* * 32 * *":                  "day-of-month: 32 is out of range 1-31",
		"* * * 13 *":                  "month: 13 is out of range 1-12",
		"* * * foo *":                 `month: "foo" is neither a number nor a name (jan-dec)`,
		"* * * * 8":                   "day-of-week: 8 is out of range 0-7",
		"* * * * fri-mon":             "day-of-week: range fri-mon is backwards",
		"0 0 30 2 *":                  "day-of-month: no day listed falls in the months listed",
		"0 0 31 4,6,9,11 *":           "day-of-month: no day listed falls in the months listed",
		"@reboot":                     "@reboot is not one of @yearly",
		"@every 1500ms":               "@every 1.5s: the interval must be a positive whole number of seconds",
		"@everyday":                   "@everyday is not one of @yearly",
		"CRON_TZ=Nowhere/City @daily": `time zone "Nowhere/City" is unknown`,
		"CRON_TZ= @daily":             `time zone "" is unknown`,
	} {
		_, err := Parse(spec, nil)
		require.ErrorIs(t, err, ErrInvalid, spec)
		require.ErrorIs(t, err, store.ErrInvalid, spec)
		require.ErrorContains(t, err, want, spec)
		require.ErrorContains(t, err, fmt.Sprintf("schedule: invalid input: %q", spec))
	}
}

// With both day fields restricted a day matches either; with one
// beginning with '*' it must match both (Vixie cron's rule).
func TestTheDayRuleIsVixieCrons(t *testing.T) {
	at := func(spec string, from time.Time, n int) []string {
		s, err := Parse(spec, nil)
		require.NoError(t, err)
		var out []string
		for range n {
			from = s.Next(from)
			out = append(out, from.Format("Mon Jan 2"))
		}
		return out
	}
	from := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC) // a Sunday
	require.Equal(t, []string{"Mon Jun 2", "Mon Jun 9", "Fri Jun 13", "Mon Jun 16"}, at("0 0 13 * mon", from, 4))
	require.Equal(t, []string{"Mon Jun 2", "Mon Jun 9", "Mon Jun 16"}, at("0 0 * * mon", from, 3))
	require.Equal(t, []string{"Tue Jun 3", "Thu Jun 5", "Sat Jun 7"}, at("0 0 */2 * *", from, 3))
	require.Equal(t, []string{"Mon Jun 9", "Mon Jun 23", "Mon Jul 7"}, at("0 0 */2 * mon", from, 3))                         // odd days and Mondays
	require.Equal(t, []string{"Tue Feb 29", "Sun Feb 29"}, at("0 0 29 2 *", time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), 2)) // 2028, 2032
}

// Whatever the spec, Parse returns a schedule or an error matching
// ErrInvalid, never panics, and a schedule it returns has slots: Next is
// after t and is its own Prev.
func FuzzParseNeverPanicsAndEverySchedulesSlotsAreConsistent(f *testing.F) {
	for _, spec := range []string{
		"* * * * *", "*/15 8-18/2 1,15 jan-mar,DEC mon-fri", "0 0 29 2 *", "CRON_TZ=Europe/Paris 30 2 * * *",
		"TZ=America/Sao_Paulo @daily", "5/20 22 10-12 6 7", "0 0 30 2 *", "@reboot", "1-", "*/", ",", "CRON_TZ=",
	} {
		f.Add(spec, int64(1743296400))
	}
	f.Fuzz(func(t *testing.T, spec string, unix int64) {
		s, err := Parse(spec, nil)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalid)
			return
		}
		at := time.Unix(unix%(1<<36), 0) // within ±2000 years of 1970
		next := s.Next(at)
		require.True(t, next.After(at), "%q: Next(%v) = %v", spec, at, next)
		require.True(t, s.Prev(next).Equal(next), "%q: Prev(Next) = Next", spec)
		require.False(t, s.Prev(at).After(at))
	})
}
