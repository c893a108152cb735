package browsertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
	"github.com/converge-go/converge/store"
)

// Generous bounds for a shared machine; polls end as soon as they see
// what they wait for.
const (
	deadline = 90 * time.Second
	poll     = 50 * time.Millisecond
)

// failuresBeforeLongBackoff is how many quick retries the failing key
// gets before it backs off for an hour (see backoff).
const failuresBeforeLongBackoff = 4

// backoff retries a key quickly a few times, then waits an hour: the
// failing key's retries settle at a known number while the test looks.
type backoff struct {
	mu    sync.Mutex
	count map[string]int
}

func (b *backoff) When(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.count[key]++
	if b.count[key] < failuresBeforeLongBackoff {
		return 10 * time.Millisecond
	}
	return time.Hour
}

func (b *backoff) Forget(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.count, key)
}

func (b *backoff) NumRequeues(key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.count[key]
}

// catalogKeys and shopKeys count the scene's keys under catalog/ and
// shop/.
const catalogKeys, shopKeys = 150, 4

// ledgerToken is a token too long for any line of the error column;
// ledgerError is an error of ordinary words, then that token.
var ledgerToken = strings.Repeat("0123456789abcdef", 16)
var ledgerError = "ledger service rejected the batch because the account currency " +
	"does not match the currency configured for this merchant; correlation " + ledgerToken

// serve runs a Manager with one controller over a memory store: 150
// converged catalog/ keys, shop/payments failing (an error with markup in
// it), shop/ledger failed terminally with a long error (ledgerError),
// shop/refunds asking to be polled in an hour, shop/checkout blocked in
// its reconcile. It returns the page's URL once the keys are there.
func serve(t *testing.T) string {
	release := make(chan struct{})
	s := store.NewMemory[string]()
	for i := range catalogKeys {
		mustCreate(t, s, fmt.Sprintf("catalog/item-%03d", i), "ok")
	}
	mustCreate(t, s, "shop/payments", "fail")
	mustCreate(t, s, "shop/ledger", "ledger")
	mustCreate(t, s, "shop/refunds", "poll")
	mustCreate(t, s, "shop/checkout", "block")
	rec := reconcile.ReconcilerFunc[string](func(ctx context.Context, req reconcile.Request[string]) (reconcile.Result, error) {
		switch req.Object.Value {
		case "fail":
			return reconcile.Result{}, errors.New("card processor unreachable: <b>502</b>")
		case "ledger":
			return reconcile.Result{}, reconcile.Terminal(errors.New(ledgerError))
		case "poll":
			return reconcile.Result{RequeueAfter: time.Hour}, nil
		case "block":
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return reconcile.Result{}, nil
	})
	c, err := reconcile.New(s, rec, reconcile.Options[string]{Name: "shop", Workers: 4,
		RateLimiter: &backoff{count: map[string]int{}}})
	if err != nil {
		t.Fatal(err)
	}
	base := mount(t, c, func() { close(release) })
	eventually(t, "the keys reach their states", func() (bool, string) {
		states, err := keyStates(base + "?format=json&size=1000")
		if err != nil {
			return false, err.Error()
		}
		want := map[string]string{"shop/payments": fmt.Sprintf("delayed %d", failuresBeforeLongBackoff),
			"shop/refunds": "delayed 0", "shop/checkout": "processing 0", "catalog/item-149": "idle 0", "shop/ledger": "idle 0"}
		for k, v := range want {
			if states[k] != v {
				return false, fmt.Sprintf("%s is %q, want %q", k, states[k], v)
			}
		}
		return true, ""
	})
	return base
}

// keyStates reads the page's JSON: "state retries" by key.
func keyStates(url string) (map[string]string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var page struct {
		Controllers []struct {
			Keys []struct {
				Key, State string
				Retries    int
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, c := range page.Controllers {
		for _, k := range c.Keys {
			out[k.Key] = fmt.Sprintf("%s %d", k.State, k.Retries)
		}
	}
	return out, nil
}

func mustCreate(t *testing.T, s *store.Memory[string], key, value string) {
	if _, err := s.Create(context.Background(), key, value); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond until it holds, failing the test with cond's last
// word after the deadline.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	end := time.Now().Add(deadline)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v: %s", what, deadline, why)
		}
		<-tick.C
	}
}

// chromium returns the browser's path, or skips the test.
func chromium(t *testing.T) string {
	for _, p := range []string{os.Getenv("CHROMIUM"), "/usr/bin/chromium"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("skipped: headless Chromium not found (no $CHROMIUM, /usr/bin/chromium or chromium on PATH); " +
		"install Debian's chromium package (apt-get install chromium) to run this browser test — it installs nothing itself")
	return ""
}

// browser starts headless Chromium with the flags a container needs.
func browser(t *testing.T) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1500, 1000),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	// The first run starts the browser, on a context without a timeout
	// (a timeout there would bound the browser's life); every later step
	// gets its own (see do).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", chromium(t), err)
	}
	return ctx
}

// do runs steps, each call bounded by the deadline.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if _, err := run(ctx, chromedp.Steps(steps...)); err != nil {
		t.Fatal(err)
	}
}

// run runs one action bounded by the deadline.
func run[T any](ctx context.Context, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	return chromedp.Run(ctx, a)
}

// row is a key's row as a person reads it.
type row struct{ Key, State, Retries, NextRetry, Outcome, Error, Log string }

// rows reads the table of the page shown.
func rows(t *testing.T, ctx context.Context) []row {
	t.Helper()
	const js = `Array.from(document.querySelectorAll('tr.key')).map(r =>
		['key', 'state', 'retries', 'next-retry', 'outcome', 'error', 'log'].map(c => r.querySelector('td.' + c).innerText.trim()))`
	cells, err := run(ctx, chromedp.Evaluate[[][]string](js))
	if err != nil {
		t.Fatalf("reading the table: %v", err)
	}
	out := make([]row, len(cells))
	for i, c := range cells {
		out[i] = row{c[0], c[1], c[2], c[3], c[4], c[5], c[6]}
	}
	return out
}

// text reads the text of the first element matching sel.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("reading %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// navigated waits until the browser shows a page whose URL has want.
func navigated(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	eventually(t, "the browser shows "+want, func() (bool, string) {
		loc, err := run(ctx, chromedp.Location())
		if err != nil {
			return false, err.Error()
		}
		state, err := run(ctx, chromedp.Evaluate[string](`document.readyState`))
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(loc, want) && state == "complete", loc + " " + state
	})
}

func TestAPersonSeesWhyAKeyIsNotConvergingAndFiltersAndPages(t *testing.T) {
	ctx := browser(t)
	base := serve(t)

	// Every key, most retried first: the failing key's retries, error
	// and next retry.
	do(t, ctx, chromedp.Navigate(base+"?sort=retries"), chromedp.WaitVisible(chromedp.CSS(`section.controller`)))
	if got := text(t, ctx, `section.controller h2`); got != "shop" {
		t.Errorf("controller heading %q, want shop", got)
	}
	all := rows(t, ctx)
	if len(all) != debugpage.DefaultPageSize || all[0].Key != "shop/payments" {
		t.Fatalf("the first page sorted by retries shows %d keys, first %v; want %d, shop/payments first",
			len(all), all[:min(1, len(all))], debugpage.DefaultPageSize)
	}
	payments := all[0]
	if payments.State != "delayed" || payments.Retries != fmt.Sprint(failuresBeforeLongBackoff) || !strings.HasPrefix(payments.Outcome, "error") {
		t.Errorf("shop/payments shows state %q, retries %q, outcome %q; want delayed, %d, error",
			payments.State, payments.Retries, payments.Outcome, failuresBeforeLongBackoff)
	}
	if payments.Error != "card processor unreachable: <b>502</b>" {
		t.Errorf("shop/payments shows error %q: the error's markup must read as text", payments.Error)
	}
	next, in, _ := strings.Cut(payments.NextRetry, " (in ")
	if at, err := time.Parse(time.RFC3339, next); err != nil || time.Until(at) < 50*time.Minute || !strings.HasSuffix(in, ")") {
		t.Errorf("shop/payments shows next retry %q, want an RFC 3339 time about an hour ahead and how long until it", payments.NextRetry)
	}
	if !strings.HasPrefix(payments.Log, "controller=shop key=shop/payments revision=") {
		t.Errorf("shop/payments shows log attributes %q", payments.Log)
	}
	if got := text(t, ctx, `.pageinfo`); !strings.Contains(got, fmt.Sprintf("page 1 of 2 · %d keys match", catalogKeys+shopKeys)) {
		t.Errorf("page info %q", got)
	}

	// The screenshot shows the keys that need a look first.
	do(t, ctx, chromedp.Navigate(base+"?sort=state&size=12"), chromedp.WaitVisible(chromedp.CSS(`tr.key`)))
	png, err := run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(t.TempDir(), "debugpage.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)
	if path := os.Getenv("CONVERGE_SCREENSHOT"); path != "" {
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot also written to %s (CONVERGE_SCREENSHOT)", path)
	}

	// Filter by state with the form: only the processing key.
	do(t, ctx,
		chromedp.Navigate(base),
		chromedp.WaitVisible(chromedp.CSS(`form`)),
		chromedp.Click(chromedp.CSS(`input[name=state][value=processing]`)),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
	)
	navigated(t, ctx, "state=processing")
	if got := rows(t, ctx); len(got) != 1 || got[0].Key != "shop/checkout" || !strings.HasPrefix(got[0].State, "processing") {
		t.Errorf("filtered by processing, the page shows %v; want shop/checkout alone", got)
	}

	// Filter by prefix, 50 keys a page: page 1 of 3 of the catalog.
	do(t, ctx,
		chromedp.Click(chromedp.CSS(`input[name=state][value=processing]`)), // untick
		chromedp.SetValue(chromedp.CSS(`input[name=prefix]`), "catalog/"),
		chromedp.SetValue(chromedp.CSS(`input[name=size]`), "50"),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
	)
	navigated(t, ctx, "prefix=catalog")
	checkCatalogPage(t, ctx, 1)

	// Pagination: the next link, twice, then no further.
	for page := 2; page <= 3; page++ {
		do(t, ctx, chromedp.Click(chromedp.CSS(`a.next`)))
		navigated(t, ctx, fmt.Sprintf("page=%d", page))
		checkCatalogPage(t, ctx, page)
	}
	nexts, err := run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('a.next').length`))
	if err != nil {
		t.Fatal(err)
	}
	if nexts != 0 {
		t.Errorf("the last page has a next link")
	}
}

// checkCatalogPage checks that the page shows catalog keys 50(page-1) to
// 50·page-1, in order, and says which page it is.
func checkCatalogPage(t *testing.T, ctx context.Context, page int) {
	t.Helper()
	got := rows(t, ctx)
	if len(got) != 50 {
		t.Fatalf("catalog page %d shows %d keys, want 50", page, len(got))
	}
	for i, r := range got {
		if want := fmt.Sprintf("catalog/item-%03d", 50*(page-1)+i); r.Key != want || r.State != "idle" || r.Outcome == "" {
			t.Fatalf("catalog page %d row %d: %+v, want %s, idle, with an outcome", page, i, r, want)
		}
	}
	if info := text(t, ctx, `.pageinfo`); !strings.Contains(info, fmt.Sprintf("page %d of 3 · %d keys match", page, catalogKeys)) {
		t.Errorf("page info %q", info)
	}
}

// errorLayout is how the browser laid out an error cell: its text and
// width in ems, the most lines any occurrence of each word spans, and
// whether the cell or the page overflows sideways.
type errorLayout struct {
	Text                         string
	WidthEm                      float64
	Lines                        map[string]int
	CellOverflows, PageOverflows bool
}

// layoutJS measures shop/ledger's error cell as errorLayout: the lines of
// a word are the distinct tops of its text's boxes.
const layoutJS = `(() => {
	const td = document.querySelector('tr.key[data-key="shop/ledger"] td.error');
	const node = document.createTreeWalker(td, NodeFilter.SHOW_TEXT).nextNode(), r = document.createRange();
	const lines = {};
	let at = 0;
	for (const word of node.data.split(' ')) {
		r.setStart(node, at);
		r.setEnd(node, at += word.length);
		at++;
		const tops = new Set(Array.from(r.getClientRects()).filter(b => b.width > 0).map(b => Math.round(b.top)));
		lines[word] = Math.max(lines[word] || 0, tops.size);
	}
	const box = td.firstElementChild || td, page = document.documentElement;
	return {Text: node.data, Lines: lines, WidthEm: td.getBoundingClientRect().width / parseFloat(getComputedStyle(td).fontSize),
		CellOverflows: box.scrollWidth > box.clientWidth + 1, PageOverflows: page.scrollWidth > page.clientWidth};
})()`

// A long error gets a column a person can read (at least 15 ems, not a
// sliver beside the other columns) and wraps at word boundaries: no
// ordinary word is split across lines, while a token longer than a line
// breaks inside the cell rather than widening the table past the page.
func TestAnErrorGetsAReadableColumnAndWrapsAtWordBoundaries(t *testing.T) {
	ctx := browser(t)
	base := serve(t)
	do(t, ctx, chromedp.Navigate(base+"?prefix=shop/"), chromedp.WaitVisible(chromedp.CSS(`tr.key[data-key="shop/ledger"]`)))
	got, err := run(ctx, chromedp.Evaluate[errorLayout](layoutJS))
	if err != nil {
		t.Fatalf("measuring the error cell: %v", err)
	}
	if got.Text != "terminal: "+ledgerError {
		t.Fatalf("the error cell reads %q", got.Text)
	}
	if got.WidthEm < 15 {
		t.Errorf("the error column is %.1f ems wide, want at least 15", got.WidthEm)
	}
	for word, lines := range got.Lines {
		switch {
		case word == ledgerToken && lines < 2:
			t.Errorf("the %d-character token spans %d line: it must break to fit", len(word), lines)
		case word != ledgerToken && lines != 1:
			t.Errorf("the word %q is split across %d lines", word, lines)
		}
	}
	if got.CellOverflows || got.PageOverflows {
		t.Errorf("the error overflows sideways: cell %v, page %v", got.CellOverflows, got.PageOverflows)
	}
}
