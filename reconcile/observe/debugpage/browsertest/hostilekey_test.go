package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/chromedp/chromedp"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
)

// hostileKey is a stored key of 995 bytes that tries to reverse the text
// after it (U+202E), clear a terminal (ESC [2J) and return the carriage.
var hostileKey = "shop/" + strings.Repeat("\u202egnp.exe\x1b[2J\r", 66)

// hostileError is a 1.6 MB error with bidi overrides, a terminal escape,
// BEL and bytes that are not UTF-8.
var hostileError = strings.Repeat(hostilePart, 1600<<10/len(hostilePart))

const hostilePart = "refused by \u202ethe bank\u202c \x1b[31m\x07\xff\xfe; "

// serveScene serves a controller over twelve converged catalog keys and
// shop/ledger, failed terminally with ledgerError; with hostile, also
// hostileKey, failed terminally with hostileError. It returns the page's
// URL once every key has been reconciled.
func serveScene(t *testing.T, hostile bool) string {
	s := store.NewMemory[string]()
	want := 13
	for i := range 12 {
		mustCreate(t, s, fmt.Sprintf("catalog/item-%03d", i), "ok")
	}
	mustCreate(t, s, "shop/ledger", "ledger")
	if hostile {
		mustCreate(t, s, hostileKey, "hostile")
		want++
	}
	rec := reconcile.ReconcilerFunc[string](func(_ context.Context, req reconcile.Request[string]) (reconcile.Result, error) {
		switch req.Object.Value {
		case "ledger":
			return reconcile.Result{}, reconcile.Terminal(errors.New(ledgerError))
		case "hostile":
			return reconcile.Result{}, reconcile.Terminal(errors.New(hostileError))
		}
		return reconcile.Result{}, nil
	})
	c, err := reconcile.New(s, rec, reconcile.Options[string]{Name: "shop", Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	base := mount(t, c, nil)
	eventually(t, "every key is reconciled", func() (bool, string) {
		n, err := reconciled(base + "?format=json&size=100")
		return err == nil && n == want, fmt.Sprintf("%d of %d keys reconciled (%v)", n, want, err)
	})
	return base
}

// reconciled counts the keys of the page's JSON that have an outcome.
func reconciled(url string) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var page struct {
		Controllers []struct {
			Keys []struct{ LastOutcome string }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		return 0, err
	}
	n := 0
	for _, c := range page.Controllers {
		for _, k := range c.Keys {
			if k.LastOutcome != "" {
				n++
			}
		}
	}
	return n, nil
}

// box is an element's place on the page, in CSS pixels.
type box struct{ Left, Right, Top, Bottom float64 }

// tableLayout is where the browser put the keys table: its headers, each
// row's key and cells, and the text of the key and error cells as shown.
type tableLayout struct {
	ViewportWidth, ScrollWidth float64
	Headers                    []box
	Rows                       []rowLayout
}

// rowLayout is a key's row: its key as data-key holds it, its cells, and
// the text of its key and error cells as the browser renders them.
type rowLayout struct {
	Key              string
	Cells            []box
	KeyText, ErrText string
}

const tableLayoutJS = `(() => {
	const place = e => { const r = e.getBoundingClientRect(); return {Left: r.left, Right: r.right, Top: r.top, Bottom: r.bottom}; };
	const table = document.querySelector('section.controller > table');
	return {ViewportWidth: document.documentElement.clientWidth, ScrollWidth: document.documentElement.scrollWidth,
		Headers: Array.from(table.querySelectorAll('thead th')).map(place),
		Rows: Array.from(table.querySelectorAll('tr.key')).map(r => ({Key: r.dataset.key, Cells: Array.from(r.cells).map(place),
			KeyText: r.querySelector('td.key').innerText, ErrText: r.querySelector('td.error').innerText}))};
})()`

// hostileRow is how the page names hostileKey in data-key: displayed.
const hostileRow = `shop/\u202egnp.exe\x1b[2J\r`

// layoutOf loads url and returns its table's layout and a full screenshot.
func layoutOf(t *testing.T, ctx context.Context, url string) (tableLayout, []byte) {
	t.Helper()
	do(t, ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`tr.key[data-key="shop/ledger"]`)))
	got, err := run(ctx, chromedp.Evaluate[tableLayout](tableLayoutJS))
	if err != nil {
		t.Fatalf("measuring the table: %v", err)
	}
	shot, err := run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		// Chromium refuses to capture a page too large ("Page is too
		// large"): a failure, and the layout still tells what is wrong.
		t.Errorf("no screenshot of %s (%v wide, the table %d rows): %v", url, got.ScrollWidth, len(got.Rows), err)
	}
	return got, shot
}

// A stored key of 995 bytes holding U+202E, ESC and CR, whose reconcile
// failed with a 1.6 MB error of bidi overrides, escapes and bytes that are
// not UTF-8, leaves the page readable: the key and error show as visible
// escapes (no bidi or control character in the text the browser renders),
// cut with the whole one click away; the page stays small; and the table
// keeps the geometry it has without the key: every header and every other
// key's cell in the same place, all within the window, the screenshot
// as wide and its header row, pixel by pixel, nearly the same.
func TestAHostileKeyAndErrorLeaveThePageReadableAndItsColumnsInPlace(t *testing.T) {
	ctx := browser(t)
	plain, hostile := serveScene(t, false), serveScene(t, true)
	before, beforeShot := layoutOf(t, ctx, plain+"?size=100")
	after, afterShot := layoutOf(t, ctx, hostile+"?size=100")
	saveShots(t, beforeShot, afterShot)

	html := body(t, hostile+"?size=100")
	if len(html) > 128<<10 {
		t.Errorf("the page with the hostile key is %d bytes, want at most 128 KiB (the error alone is %d)", len(html), len(hostileError))
	}
	t.Logf("HTML: %d bytes without the hostile key, %d with it", len(body(t, plain+"?size=100")), len(html))

	for _, l := range []tableLayout{before, after} {
		if l.ScrollWidth > l.ViewportWidth {
			t.Errorf("the page scrolls sideways: %v wide in a window of %v", l.ScrollWidth, l.ViewportWidth)
		}
	}
	checkSameColumns(t, before, after)
	checkHostileRow(t, after)
	checkSameHeaderPixels(t, before, after, beforeShot, afterShot)

	// One click on the error's marker shows the whole (escaped), within
	// its column.
	do(t, ctx, chromedp.Click(chromedp.CSS(`tr.key[data-key^="`+strings.ReplaceAll(hostileRow[:11], `\`, `\\`)+`"] td.error summary`)))
	opened, err := run(ctx, chromedp.Evaluate[tableLayout](tableLayoutJS))
	if err != nil {
		t.Fatal(err)
	}
	row := findRow(t, opened, hostileRow)
	if n := strings.Count(row.ErrText, `refused by \u202ethe bank`); n < 100 {
		t.Errorf("the opened error shows %d of its parts, want the whole up to the bound (over 100)", n)
	}
	if opened.ScrollWidth > opened.ViewportWidth {
		t.Errorf("the opened error makes the page scroll sideways: %v in %v", opened.ScrollWidth, opened.ViewportWidth)
	}
}

// shiftTolerance is how far (in CSS pixels) a column may move between the
// two pages: the columns whose content differs between them (ages,
// durations, counts) size themselves by it, a few pixels. A hostile key
// that the page did not contain pushed the columns thousands of pixels.
const shiftTolerance = 16

// checkSameColumns checks that every header and every cell of the keys in
// both layouts are in the same place (within shiftTolerance) and within
// the window.
func checkSameColumns(t *testing.T, before, after tableLayout) {
	t.Helper()
	same := func(a, b box) bool {
		return math.Abs(a.Left-b.Left) <= shiftTolerance && math.Abs(a.Right-b.Right) <= shiftTolerance
	}
	if len(before.Headers) != 12 || len(after.Headers) != 12 {
		t.Fatalf("headers: %d and %d, want 12", len(before.Headers), len(after.Headers))
	}
	for i := range before.Headers {
		if !same(before.Headers[i], after.Headers[i]) {
			t.Errorf("column %d moved with the hostile key: %+v, then %+v", i, before.Headers[i], after.Headers[i])
		}
		if after.Headers[i].Right > after.ViewportWidth {
			t.Errorf("column %d ends at %v, past the window's %v", i, after.Headers[i].Right, after.ViewportWidth)
		}
	}
	for _, b := range before.Rows {
		a := findRow(t, after, b.Key)
		for i := range b.Cells {
			if !same(b.Cells[i], a.Cells[i]) || a.Cells[i].Right > after.ViewportWidth {
				t.Errorf("%s's cell %d moved with the hostile key: %+v, then %+v", b.Key, i, b.Cells[i], a.Cells[i])
			}
		}
	}
}

// checkHostileRow checks that the hostile key's row shows its key and
// error as visible escapes, cut, within the window.
func checkHostileRow(t *testing.T, l tableLayout) {
	t.Helper()
	row := findRow(t, l, hostileRow)
	for _, text := range []string{row.KeyText, row.ErrText} {
		if i := strings.IndexFunc(text, func(r rune) bool {
			return r != '\n' && (unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || r == '\ufffd')
		}); i >= 0 {
			t.Errorf("the browser renders %q: a control, bidi or replacement character at %d", text, i)
		}
		if !strings.Contains(text, "more bytes)") {
			t.Errorf("the browser renders %q without saying it is cut", text)
		}
	}
	if !strings.HasPrefix(row.KeyText, hostileRow) {
		t.Errorf("the key renders as %q, want it to start %q", row.KeyText, hostileRow)
	}
	if !strings.Contains(row.ErrText, `refused by \u202ethe bank\u202c \x1b[31m\x07\xff\xfe; `) {
		t.Errorf("the error renders as %q", row.ErrText)
	}
	for i, c := range row.Cells {
		if c.Right > l.ViewportWidth {
			t.Errorf("the hostile key's cell %d ends at %v, past the window's %v", i, c.Right, l.ViewportWidth)
		}
	}
}

// checkSameHeaderPixels compares the screenshots: as wide as the window,
// and the keys table's header row the same pixels but for the few that
// columns moved within shiftTolerance change (at most a quarter).
func checkSameHeaderPixels(t *testing.T, before, after tableLayout, beforeShot, afterShot []byte) {
	t.Helper()
	if beforeShot == nil || afterShot == nil {
		return
	}
	a, b := decodePNG(t, beforeShot), decodePNG(t, afterShot)
	if a.Bounds().Dx() != b.Bounds().Dx() || float64(b.Bounds().Dx()) != after.ViewportWidth {
		t.Errorf("screenshots %v and %v wide, window %v", a.Bounds().Dx(), b.Bounds().Dx(), after.ViewportWidth)
	}
	top, bottom := int(before.Headers[0].Top), int(before.Headers[0].Bottom)
	if int(after.Headers[0].Top) != top || int(after.Headers[0].Bottom) != bottom {
		t.Fatalf("the header row moved: %+v, then %+v", before.Headers[0], after.Headers[0])
	}
	differ := 0
	for y := top; y < bottom; y++ {
		for x := range min(a.Bounds().Dx(), b.Bounds().Dx()) {
			if a.At(x, y) != b.At(x, y) {
				differ++
			}
		}
	}
	// The header texts are the same on both pages; columns that moved by
	// a few pixels (shiftTolerance) change part of the band, a header row
	// pushed aside or redrawn changes most of it.
	if band := (bottom - top) * min(a.Bounds().Dx(), b.Bounds().Dx()); differ*4 > band {
		t.Errorf("the header row's pixels (rows %d to %d) differ in %d of %d places with the hostile key", top, bottom, differ, band)
	}
}

// findRow returns the row of the first key starting with keyPrefix.
func findRow(t *testing.T, l tableLayout, keyPrefix string) rowLayout {
	t.Helper()
	for _, r := range l.Rows {
		if strings.HasPrefix(r.Key, keyPrefix) {
			return r
		}
	}
	t.Fatalf("no row for %q", keyPrefix)
	return rowLayout{}
}

func decodePNG(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// saveShots writes the screenshots to the test's directory, and to
// $CONVERGE_HOSTILE_SCREENSHOT (with -before before .png) if set.
func saveShots(t *testing.T, before, after []byte) {
	t.Helper()
	if before == nil || after == nil {
		return
	}
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "before.png"), filepath.Join(dir, "hostile.png")}
	if p := os.Getenv("CONVERGE_HOSTILE_SCREENSHOT"); p != "" {
		paths = append(paths, strings.TrimSuffix(p, ".png")+"-before.png", p)
	}
	for i, p := range paths {
		if err := os.WriteFile(p, [][]byte{before, after}[i%2], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshots: %v", paths)
}

// body returns the HTML at url.
func body(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
