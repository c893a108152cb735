package schedule

import (
	"fmt"
	"strconv"
	"strings"
)

// fieldSpec is what one of the five fields may hold.
type fieldSpec struct {
	name     string
	min, max int
	names    []string // names[i] stands for min+i; none if empty
	// sunday7 accepts max+1 (7) as another spelling of min (0).
	sunday7 bool
}

var fieldSpecs = [5]fieldSpec{
	{name: "minute", min: 0, max: 59},
	{name: "hour", min: 0, max: 23},
	{name: "day-of-month", min: 1, max: 31},
	{name: "month", min: 1, max: 12, names: []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
	{name: "day-of-week", min: 0, max: 6, names: []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}, sunday7: true},
}

// parse returns the bits of the values text allows, or an error naming
// the field.
func (f fieldSpec) parse(text string) (uint64, error) {
	var bits uint64
	for item := range strings.SplitSeq(text, ",") {
		b, err := f.item(item)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", f.name, err)
		}
		bits |= b
	}
	return bits, nil
}

// item parses one element of a list: '*', a, a-b, each with an optional
// step.
func (f fieldSpec) item(item string) (uint64, error) {
	if item == "" {
		return 0, fmt.Errorf("empty list item")
	}
	rng, stepText, hasStep := strings.Cut(item, "/")
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("step %q is not a positive number", stepText)
		}
		step = n
	}
	lo, hi, err := f.bounds(rng, hasStep)
	if err != nil {
		return 0, err
	}
	var bits uint64
	for v := lo; v <= hi; v += step {
		if f.sunday7 && v == f.max+1 {
			v = f.min
			bits |= 1 << v
			break
		}
		bits |= 1 << v
	}
	return bits, nil
}

// bounds returns the range rng stands for: '*' the whole field, "a-b", or
// "a" (alone, or up to the end of the field when a step follows).
func (f fieldSpec) bounds(rng string, stepped bool) (lo, hi int, err error) {
	if rng == "*" {
		return f.min, f.max, nil
	}
	loText, hiText, isRange := strings.Cut(rng, "-")
	if lo, err = f.value(loText); err != nil {
		return 0, 0, err
	}
	switch {
	case isRange:
		if hi, err = f.value(hiText); err != nil {
			return 0, 0, err
		}
		if hi < lo {
			return 0, 0, fmt.Errorf("range %s is backwards", rng)
		}
	case stepped:
		hi = f.max
	default:
		hi = lo
	}
	return lo, hi, nil
}

// value parses a number or a name of the field.
func (f fieldSpec) value(text string) (int, error) {
	for i, name := range f.names {
		if strings.EqualFold(text, name) {
			return f.min + i, nil
		}
	}
	n, err := strconv.Atoi(text)
	if err != nil {
		if len(f.names) > 0 {
			return 0, fmt.Errorf("%q is neither a number nor a name (%s-%s)", text, f.names[0], f.names[len(f.names)-1])
		}
		return 0, fmt.Errorf("%q is not a number", text)
	}
	top := f.max
	if f.sunday7 {
		top++
	}
	if n < f.min || n > top {
		return 0, fmt.Errorf("%d is out of range %d-%d", n, f.min, top)
	}
	return n, nil
}
