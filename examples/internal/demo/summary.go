package demo

import (
	"fmt"
	"io"
)

// Summary writes the summary a demo prints at its end: a heading, then
// one line per label, the labels aligned.
type Summary struct {
	w io.Writer
}

// NewSummary writes the heading to w and returns the summary.
func NewSummary(w io.Writer) *Summary {
	fmt.Fprintln(w, "\nsummary")
	return &Summary{w: w}
}

// Line writes one labelled line.
func (s *Summary) Line(label, format string, args ...any) {
	fmt.Fprintf(s.w, "  %-14s %s\n", label+":", fmt.Sprintf(format, args...))
}

// Result writes the last line: "ok", or what failed.
func (s *Summary) Result(err error) {
	if err != nil {
		s.Line("result", "FAILED: %v", err)
		return
	}
	s.Line("result", "ok")
}
