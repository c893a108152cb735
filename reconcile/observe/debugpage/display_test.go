package debugpage

import (
	"html"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The characters that must never reach the page as themselves, from the
// rule's contract: controls (C0, DEL, C1), format characters (the bidi
// embeddings, overrides, isolates and marks among them), line and
// paragraph separators.
func forbidden(r rune) bool {
	return unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// bidi are the bidi controls the page must escape, by name.
var bidi = []rune{'\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069',
	'\u200e', '\u200f', '\u061c'}

// undisplay gives back the bytes a displayed text shows: its text parts
// unescaped from HTML, each marked escape decoded. It fails the test on
// anything else.
func undisplay(t *testing.T, marked string) string {
	t.Helper()
	const open, shut = `<span class="esc">`, `</span>`
	var out strings.Builder
	for {
		before, rest, found := strings.Cut(marked, open)
		require.NotContains(t, before, "<", "markup other than an escape in %q", marked)
		out.WriteString(html.UnescapeString(before))
		if !found {
			return out.String()
		}
		esc, after, ok := strings.Cut(rest, shut)
		require.True(t, ok, "an escape not closed in %q", marked)
		out.WriteString(unescape(t, esc))
		marked = after
	}
}

// unescape decodes one escape: \xHH (a byte), \t, \n, \r, \uHHHH,
// \UHHHHHHHH.
func unescape(t *testing.T, esc string) string {
	t.Helper()
	switch esc {
	case `\t`:
		return "\t"
	case `\n`:
		return "\n"
	case `\r`:
		return "\r"
	}
	require.True(t, len(esc) > 2 && esc[0] == '\\', "not an escape: %q", esc)
	n, err := strconv.ParseUint(esc[2:], 16, 32)
	require.NoError(t, err, "escape %q", esc)
	switch {
	case esc[1] == 'x' && len(esc) == 4:
		return string([]byte{byte(n)})
	case esc[1] == 'u' && len(esc) == 6, esc[1] == 'U' && len(esc) == 10:
		return string(rune(n))
	}
	t.Fatalf("not an escape: %q", esc)
	return ""
}

// checkDisplayed checks the rule's contract for s shown within limit: the
// HTML and plain forms are valid UTF-8 without a forbidden character or a
// run of more than maxMarks marks; the plain form shows at most limit
// characters and is the HTML without its marks; the HTML gives back s,
// or a prefix of s of len(s)-cut bytes when it is cut.
func checkDisplayed(t *testing.T, s string, limit int) {
	t.Helper()
	d := display(s, limit)
	for _, form := range []string{d.html, d.plain} {
		require.True(t, utf8.ValidString(form), "%q displays as invalid UTF-8 %q", s, form)
		marks := 0
		for _, r := range form {
			if forbidden(r) {
				t.Fatalf("%q displays %U as itself: %q", s, r, form)
			}
			if marks++; !unicode.In(r, unicode.Mn, unicode.Me) {
				marks = 0
			}
			if marks > maxMarks {
				t.Fatalf("%q displays a run of marks: %q", s, form)
			}
		}
	}
	require.LessOrEqual(t, utf8.RuneCountInString(d.plain), limit, "%q shown within %d", s, limit)
	require.Equal(t, html.UnescapeString(strings.NewReplacer(`<span class="esc">`, "", `</span>`, "").Replace(d.html)), d.plain)
	back := undisplay(t, d.html)
	require.Equal(t, s[:len(s)-d.cut], back, "%q within %d gives back another value", s, limit)
	if d.cut > 0 {
		// The next character would not have fitted.
		_, size := utf8.DecodeRuneInString(s[len(s)-d.cut:])
		next := display(s[:len(s)-d.cut+size], len(s)*10+10)
		require.Greater(t, utf8.RuneCountInString(next.plain), limit, "%q was cut with room left", s)
	}
}

// palette is what hostile text is made of: ASCII, HTML's specials, a
// backslash and text that reads like an escape, every control kind, the
// bidi controls, other format characters, separators, marks, an emoji,
// and bytes that are not UTF-8.
var palette = []string{"a", "Z", "0", " ", "/", "<", ">", "&", `"`, "'", `\`, `\x1b`, `\u202e`, "\x00", "\x07", "\x1b",
	"\t", "\n", "\r", "\x7f", "\u0085", "\u009b", "\u200b", "\u200d", "\ufeff", "\u2028", "\u2029", "\u00ad",
	"\U000e0001", "\u0301", "\u20dd", "é", "日本", "\U0001f600", "\ufffd", "\xff", "\x80", "\xc3", "\xe2\x80", "\xed\xa0\x80"}

func init() {
	for _, r := range bidi {
		palette = append(palette, string(r))
	}
}

// hostile returns a random text of up to n pieces of palette.
func hostile(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range rng.IntN(n + 1) {
		b.WriteString(palette[rng.IntN(len(palette))])
	}
	return b.String()
}

// For any text, what the page shows is valid UTF-8, holds no control,
// format (bidi) or separator character and no pile of marks, shows at most
// the bound's characters, and gives back the value exactly (or the part
// of it before a cut, the rest counted): two values never look the same.
func TestTheDisplayRuleShowsAnyTextAsBoundedVisibleCharactersThatGiveItBack(t *testing.T) {
	for _, r := range bidi {
		assert.True(t, forbidden(r), "%U", r)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		s := hostile(rng, 40)
		checkDisplayed(t, s, 1+rng.IntN(60))
		checkDisplayed(t, s, 1000)
	}
	for _, s := range []string{"", "plain", `a\x1bb`, "a\x1bb", "\u202egnp.exe", strings.Repeat("e\u0301\u0301\u0301\u0301\u0301", 20)} {
		checkDisplayed(t, s, nameRunes)
	}
	// Values that look alike look different.
	assert.NotEqual(t, display(`a\x1bb`, nameRunes).html, display("a\x1bb", nameRunes).html)
	assert.NotEqual(t, display("\xff", nameRunes).html, display("\u00ff", nameRunes).html)
}

// A text longer than its bound is cut with a marker counting the bytes
// left out, and the whole, by the same rule, is in a details element;
// past wholeRunes the whole is cut too and says the JSON has it.
func TestATextPastItsBoundShowsCutWithTheWholeOneClickAway(t *testing.T) {
	long := strings.Repeat("x\x1b\u202e", 500) // 5,500 characters shown
	got := string(show(long, errorRunes))
	short, whole := display(long, errorRunes), display(long, wholeRunes)
	require.Positive(t, short.cut)
	require.Zero(t, whole.cut)
	assert.True(t, `<details class="cut"><summary><span class="short">`+short.html+`</span><span class="more">`+
		more(short.cut)+`</span></summary><div class="whole">`+whole.html+`</div></details>` == got, "the details element")
	assert.True(t, long == undisplay(t, whole.html), "the whole, shown one click away, gives back the value")

	huge := strings.Repeat("y", 1600<<10)
	got = string(show(huge, errorRunes))
	assert.Less(t, len(got), errorRunes+wholeRunes+300, "a 1.6 MB error is shown in a bounded space")
	assert.Contains(t, got, more(1600<<10-errorRunes))
	assert.Contains(t, got, more(1600<<10-wholeRunes)+`; the JSON has the whole`)
	assert.Equal(t, "plain", string(show("plain", nameRunes)), "a text within its bound is shown as it is")
}

// FuzzDisplay checks the rule's contract on any bytes.
func FuzzDisplay(f *testing.F) {
	for _, s := range palette {
		f.Add(s+"\u202e"+s, 7)
	}
	f.Fuzz(func(t *testing.T, s string, limit int) {
		checkDisplayed(t, s, 1+int(uint(limit)%200))
	})
}
