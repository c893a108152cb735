package debugpage

import (
	"fmt"
	"html/template"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The page prints text it did not write (keys, errors, names, reasons,
// query parameters) by one rule, display. Such text may hold anything: a
// store key may hold control characters and bidi controls, an error any
// bytes and megabytes of them. html/template keeps it from being markup;
// display keeps it from being anything but visible characters, of bounded
// length:
//
//   - A C0 or C1 control character or DEL, a Unicode format character
//     (category Cf: the bidi embeddings, overrides and isolates U+202A–
//     U+202E and U+2066–U+2069, the marks U+200E, U+200F and U+061C,
//     zero-width characters, the byte order mark, tags, ...), a line or
//     paragraph separator (U+2028, U+2029), and a nonspacing or enclosing
//     mark past the fourth in a row (which would stack glyphs over the
//     rows above and below) are shown as their Go escape: \t, \n, \r,
//     \xHH below U+0080, \uHHHH, \UHHHHHHHH.
//   - A byte that is not part of valid UTF-8 is shown as \xHH (HH ≥ 80;
//     a control character below U+0080 is never one).
//   - Each escape is marked (a span of class esc, set off by its
//     background), so a literal backslash in the text is told from an
//     escape: the marked HTML gives the value back exactly (see the
//     rule's tests).
//   - Text longer than its place's bound (in characters shown, an escape
//     counting its characters) is cut at a character, never inside an
//     escape, and ends "… (N more bytes)", N counted in the value's
//     bytes; the whole, displayed by the same rule up to wholeRunes, is
//     one click away (a details element), and the JSON has it unchanged.
//
// What display returns is valid UTF-8 and holds none of the characters
// above.

// Bounds, in characters shown, of text the page did not write.
const (
	// nameRunes bounds a key, a name or a short reason, in a table
	// cell or inline.
	nameRunes = 120
	// errorRunes bounds an error, or a key's log attributes.
	errorRunes = 600
	// attrRunes bounds text in an attribute (data-key, an option, the
	// prefix's input).
	attrRunes = 1200
	// wholeRunes bounds the whole value shown one click away.
	wholeRunes = 8 << 10
)

// maxMarks is how many nonspacing or enclosing marks in a row are shown
// as themselves; the rest are escaped.
const maxMarks = 4

// displayed is a text as the page prints it.
type displayed struct {
	// html is the text escaped for HTML, each escape marked.
	html string
	// plain is the same text without marks, for an attribute.
	plain string
	// cut counts the bytes of the value left out; 0 when it is whole.
	cut int
}

// display applies the page's rule (see above) to s, keeping at most limit
// characters shown.
func display(s string, limit int) displayed {
	var html, plain strings.Builder
	text := 0 // start of the run of text not yet written
	shown, marks := 0, 0
	flush := func(end int) {
		html.WriteString(template.HTMLEscapeString(s[text:end]))
		plain.WriteString(s[text:end])
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		esc := ""
		switch {
		case r == utf8.RuneError && size == 1:
			marks = 0
			esc = fmt.Sprintf(`\x%02x`, s[i])
		case unicode.In(r, unicode.Mn, unicode.Me):
			if marks++; marks > maxMarks {
				esc = escapeRune(r)
			}
		default:
			marks = 0
			if hidden(r) {
				esc = escapeRune(r)
			}
		}
		width := 1
		if esc != "" {
			width = len(esc)
		}
		if shown+width > limit {
			flush(i)
			return displayed{html: html.String(), plain: plain.String(), cut: len(s) - i}
		}
		shown += width
		if esc != "" {
			flush(i)
			html.WriteString(`<span class="esc">` + esc + `</span>`)
			plain.WriteString(esc)
			text = i + size
		}
		i += size
	}
	flush(len(s))
	return displayed{html: html.String(), plain: plain.String()}
}

// hidden reports whether r is shown as its escape: a control character, a
// format character, a line or paragraph separator.
func hidden(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// escapeRune is r as a Go escape.
func escapeRune(r rune) string {
	switch {
	case r == '\t':
		return `\t`
	case r == '\n':
		return `\n`
	case r == '\r':
		return `\r`
	case r < utf8.RuneSelf:
		return fmt.Sprintf(`\x%02x`, r)
	case r <= 0xffff:
		return fmt.Sprintf(`\u%04x`, r)
	}
	return fmt.Sprintf(`\U%08x`, r)
}

// more is the marker ending a text cut short, n bytes left out.
func more(n int) string {
	return fmt.Sprintf("… (%d more bytes)", n)
}

// show is s displayed for HTML within limit characters: when it is cut,
// a details element whose summary is the cut text and its marker, and
// whose body is the whole, up to wholeRunes.
func show(s string, limit int) template.HTML {
	d := display(s, limit)
	if d.cut == 0 {
		return template.HTML(d.html)
	}
	whole := display(s, wholeRunes)
	end := ""
	if whole.cut > 0 {
		end = `<span class="more">` + more(whole.cut) + `; the JSON has the whole</span>`
	}
	return template.HTML(`<details class="cut"><summary><span class="short">` + d.html +
		`</span><span class="more">` + more(d.cut) + `</span></summary><div class="whole">` +
		whole.html + end + `</div></details>`)
}

// attr is s displayed for an attribute, within attrRunes characters.
func attr(s string) string {
	d := display(s, attrRunes)
	if d.cut > 0 {
		return d.plain + more(d.cut)
	}
	return d.plain
}

// displayFuncs are the rule's template functions: text for a key, a name
// or a reason; long for an error or a log line; attr for an attribute.
var displayFuncs = template.FuncMap{
	"text": func(s string) template.HTML { return show(s, nameRunes) },
	"long": func(s string) template.HTML { return show(s, errorRunes) },
	"attr": attr,
}
