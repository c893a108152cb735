package prune_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/prune"
)

// TestAMarksTextReadsBackAsTheMark: String and ParseMark round-trip marks
// whose parts hold spaces, the separators and non-ASCII text, and the text
// holds no space but its two separators.
func TestAMarksTextReadsBackAsTheMark(t *testing.T) {
	for _, m := range []prune.Mark{
		{Owner: "pgop", Store: "memory:FYPA4SDQ6N2EIGVYDXHZ72SFHH"},
		{Owner: "a b", Store: "x store=y"},
		{Owner: "%41+", Store: "étoile/☃"},
	} {
		text := m.String()
		got, ok := prune.ParseMark(text)
		require.True(t, ok, text)
		require.Equal(t, m, got)
	}
	require.Equal(t, "converge owner=pgop store=memory%3AABC", prune.Mark{Owner: "pgop", Store: "memory:ABC"}.String())
}

// TestParseMarkReadsAnyOtherTextAsNoMark: text a person wrote, a mark cut
// short, a mark with a part missing or not in the exact form String makes
// is no mark.
func TestParseMarkReadsAnyOtherTextAsNoMark(t *testing.T) {
	for _, text := range []string{
		"", "the production database, do not drop", "converge owner=pgop",
		"converge owner=pgop store=", "converge owner= store=s", "converge owner=pgop store=memory%3AAB%",
		"converge owner=pgop store=memory%3aABC", // lower-case escape: not String's form
		"converge owner=pg op store=s", " converge owner=pgop store=s", "converge owner=pgop store=s ",
		"converge owner=%70gop store=s",
	} {
		m, ok := prune.ParseMark(text)
		require.False(t, ok, "%q read as %+v", text, m)
		require.True(t, m.IsZero())
	}
}

// FuzzParseMark: ParseMark never panics, accepts only text String makes,
// and every mark with both parts reads back from its text.
func FuzzParseMark(f *testing.F) {
	f.Add("converge owner=pgop store=memory%3AABC", "pgop", "memory:ABC")
	f.Add("converge owner=a+b store=c", "a b", "c")
	f.Fuzz(func(t *testing.T, text, owner, st string) {
		if m, ok := prune.ParseMark(text); ok && m.String() != text {
			t.Fatalf("%q read as %+v, whose text is %q", text, m, m.String())
		}
		m := prune.Mark{Owner: owner, Store: st}
		got, ok := prune.ParseMark(m.String())
		if ok != (owner != "" && st != "") || ok && got != m {
			t.Fatalf("%+v: text %q read back as %+v, %v", m, m.String(), got, ok)
		}
	})
}
