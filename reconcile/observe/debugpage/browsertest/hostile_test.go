package browsertest

import (
	"context"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// The hostile pages: a web page that a person on this machine opens (a
// link, an ad, a file saved from mail) tries every way a page can make the
// browser send a state-changing request to a server on loopback. A test
// of an endpoint that must refuse them:
//
//	ctx := hostileBrowser(t)
//	mux.Handle(hostilePagePath, hostilePageHandler()) // beside the endpoint
//	report := attackFromHostilePages(t, ctx, "http://127.0.0.1:PORT/v1/create?key=x")
//	// now check that the server's state did not change
//
// attackFromHostilePages loads three pages in turn, each attacking target:
//
//   - another origin: a page served from another loopback port;
//   - a file: the page written to a temporary directory and opened as a
//     file:// URL (origin "null");
//   - DNS rebinding: the page at http://evil.example:PORT, the target's
//     port, which hostileBrowser resolves to 127.0.0.1, served by the
//     target's own server at hostilePagePath. To the browser the page and
//     the target (as http://evil.example:PORT/...) are one origin, so it
//     sends whatever the page asks, JSON included; only the server's check
//     of the Host header can refuse it.
//
// Each page POSTs to target by: sendBeacon (text and a JSON Blob); fetch
// in no-cors mode with a text/plain, a urlencoded, a multipart and a JSON
// Blob body; fetch in cors mode with Content-Type application/json (a
// preflight, which must fail where nothing answers CORS) and with
// text/plain; XMLHttpRequest with text/plain; and real HTML forms
// submitted into a frame, urlencoded, multipart and text/plain (the last
// shaped so that its body is JSON). The bodies are JSON values
// ({"hostile":"page",...}) wherever the encoding allows.
//
// It returns when every page has reported that it made all its attempts
// (document.title) and every request the pages started to target's host
// has ended, so that the caller's check of its state comes after them
// all. It returns each attempt's outcome as the page saw it, for the log.
// It fails the test if a page does not finish within the deadline.
func attackFromHostilePages(t *testing.T, ctx context.Context, target string) []string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil || u.Port() == "" {
		t.Fatalf("attackFromHostilePages: target %q: want http://127.0.0.1:PORT/...", target)
	}
	pages := httptest.NewServer(hostilePageHandler())
	defer pages.Close()
	html, err := hostilePage(target)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "hostile.html")
	if err := os.WriteFile(file, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	rebound := *u
	rebound.Host = rebindingHost + ":" + u.Port()
	var report []string
	for _, p := range []struct{ name, url, host string }{
		{"another origin", pages.URL + hostilePagePath + "?target=" + url.QueryEscape(target), u.Host},
		{"file", "file://" + file, u.Host},
		{"DNS rebinding", "http://" + rebound.Host + hostilePagePath + "?target=" + url.QueryEscape(rebound.String()), rebound.Host},
	} {
		for _, line := range runHostilePage(t, ctx, p.url, p.host) {
			report = append(report, p.name+": "+line)
		}
	}
	return report
}

// rebindingHost is the name hostileBrowser resolves to 127.0.0.1.
const rebindingHost = "evil.example"

// hostilePagePath is where the server under attack serves
// hostilePageHandler, for the DNS-rebinding page.
const hostilePagePath = "/hostile-page.html"

// hostileBrowser starts headless Chromium as browser does, resolving
// rebindingHost to 127.0.0.1 as a rebinding DNS server would. It skips the
// test when Chromium is missing.
func hostileBrowser(t *testing.T) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("host-resolver-rules", "MAP "+rebindingHost+" 127.0.0.1"),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", chromium(t), err)
	}
	return ctx
}

// hostilePageHandler serves the hostile page attacking the URL in its
// query's target parameter.
func hostilePageHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		html, err := hostilePage(r.URL.Query().Get("target"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(html))
	})
}

// runHostilePage loads one page and waits until it has made its attempts
// and every request it started to host has ended; it returns the page's
// report.
func runHostilePage(t *testing.T, ctx context.Context, page, host string) []string {
	t.Helper()
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	tr := &requestTracker{host: host, open: map[network.RequestID]string{}}
	if err := chromedp.Listen(lctx, tr.event); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, chromedp.Navigate(page))
	eventually(t, "the hostile page "+page+" makes its attempts", func() (bool, string) {
		title, err := run(ctx, chromedp.Title())
		return err == nil && title == hostileDone, "title " + title
	})
	eventually(t, "the hostile page's requests end", tr.idle)
	report, err := run(ctx, chromedp.Evaluate[[]string](`window.attackReport`))
	if err != nil {
		t.Fatalf("reading the hostile page's report: %v", err)
	}
	do(t, ctx, chromedp.Navigate("about:blank"))
	return report
}

// requestTracker follows the requests a page sends to host, sendBeacon's
// included, which the page cannot wait for.
type requestTracker struct {
	host string

	mu   sync.Mutex
	open map[network.RequestID]string // the URL of each request not ended
}

func (tr *requestTracker) event(ev any) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		if u, err := url.Parse(ev.Request.URL); err == nil && u.Host == tr.host {
			tr.open[ev.RequestID] = string(ev.Type) + " " + ev.Request.Method + " " + ev.Request.URL
		}
	case *network.EventResponseReceived:
		delete(tr.open, ev.RequestID) // answered: the server has handled it
	case *network.EventLoadingFinished:
		delete(tr.open, ev.RequestID)
	case *network.EventLoadingFailed:
		delete(tr.open, ev.RequestID)
	}
}

func (tr *requestTracker) idle() (bool, string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var open []string
	for _, u := range tr.open {
		open = append(open, u)
	}
	return len(open) == 0, "still open: " + strings.Join(open, ", ")
}

// hostileDone is the title a hostile page takes once it has made every
// attempt.
const hostileDone = "attacks done"

// hostilePage is the HTML of a page attacking target.
func hostilePage(target string) (string, error) {
	var b strings.Builder
	err := hostileTemplate.Execute(&b, struct{ Target, Done string }{target, hostileDone})
	return b.String(), err
}

var hostileTemplate = template.Must(template.New("hostile").Parse(`<!doctype html>
<meta charset="utf-8"><title>attacking</title>
<body>
<script>
const target = {{.Target}};
const value = '{"hostile":"page","spec":{"command":"true"}}';
const results = [];
async function attempt(name, f) {
  try { results.push(name + ': ' + await f()); }
  catch (e) { results.push(name + ': failed: ' + e); }
}
function form(enctype, name, val) {
  return new Promise(resolve => {
    const frame = document.createElement('iframe');
    frame.name = 'f' + Math.random().toString(36).slice(2);
    document.body.appendChild(frame);
    const f = document.createElement('form');
    f.method = 'POST'; f.action = target; f.enctype = enctype; f.target = frame.name;
    const input = document.createElement('input');
    input.type = 'hidden'; input.name = name; input.value = val;
    f.appendChild(input);
    document.body.appendChild(f);
    const timer = setTimeout(() => resolve('no answer loaded'), 20000);
    frame.addEventListener('load', () => {
      let doc = null;
      try { doc = frame.contentDocument; } catch (e) {}
      if (doc === null || doc.URL !== 'about:blank') { clearTimeout(timer); resolve('answer loaded'); }
    });
    f.submit();
  });
}
const post = (mode, headers, body) =>
  fetch(target, {method: 'POST', mode, headers, body}).then(r => 'response ' + r.type + ' ' + r.status);
(async () => {
  await attempt('sendBeacon text', () => navigator.sendBeacon(target, value));
  await attempt('sendBeacon JSON blob', () => navigator.sendBeacon(target, new Blob([value], {type: 'application/json'})));
  await attempt('fetch no-cors text/plain', () => post('no-cors', {'Content-Type': 'text/plain'}, value));
  await attempt('fetch no-cors urlencoded', () => post('no-cors', {}, new URLSearchParams({[value]: ''})));
  await attempt('fetch no-cors multipart', () => { const d = new FormData(); d.append('value', value); return post('no-cors', {}, d); });
  await attempt('fetch no-cors JSON blob', () => post('no-cors', {}, new Blob([value], {type: 'application/json'})));
  await attempt('fetch cors application/json', () => post('cors', {'Content-Type': 'application/json'}, value));
  await attempt('fetch cors text/plain', () => post('cors', {'Content-Type': 'text/plain'}, value));
  await attempt('XMLHttpRequest text/plain', () => new Promise(resolve => {
    const x = new XMLHttpRequest();
    x.open('POST', target);
    x.setRequestHeader('Content-Type', 'text/plain');
    x.onloadend = () => resolve('status ' + x.status);
    x.send(value);
  }));
  await attempt('form urlencoded', () => form('application/x-www-form-urlencoded', value, ''));
  await attempt('form multipart', () => form('multipart/form-data', 'value', value));
  // name=value with the name and value chosen so the body is JSON:
  // {"hostile":"page","spec":{"command":"true"},"pad":"="}
  await attempt('form text/plain', () => form('text/plain', value.slice(0, -1) + ',"pad":"', '"}'));
  window.attackReport = results;
  document.title = {{.Done}};
})();
</script>
`))
