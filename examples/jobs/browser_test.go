package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore"
)

// hostilePage is a page that tries, every way a page can without the
// daemon's help, to add jobs whose command touches a file: a no-cors fetch
// (text/plain), a CORS fetch with a JSON body (which needs a preflight),
// and a text/plain form whose body is JSON. It shows #done once each has
// had its answer, with what the page could see of them.
const hostilePage = `<!doctype html><title>hostile</title>
<iframe name=sink></iframe>
<form id=form method=POST enctype=text/plain target=sink action="{{STORE}}/v1/create?key=jobs%2Fevil-form">
<input name='{{JSON_HEAD}},"x":"' value='"}'></form>
<script>
const store = "{{STORE}}", body = '{{JSON}}';
const url = name => store + "/v1/create?key=jobs%2Fevil-" + name;
const seen = [];
const note = (name, p) => p.then(r => seen.push(name + ": " + r.type + " " + r.status), e => seen.push(name + ": " + e));
Promise.all([
	note("nocors", fetch(url("nocors"), {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body})),
	note("cors", fetch(url("cors"), {method: "POST", headers: {"Content-Type": "application/json"}, body})),
]).then(() => {
	document.querySelector("iframe").onload = () => {
		const p = document.createElement("p");
		p.id = "done";
		p.textContent = seen.concat("form: answered").join("; ");
		document.body.append(p);
	};
	document.getElementById("form").submit();
});
</script>`

// renderHostilePage fills hostilePage in for the store at storeURL, its
// jobs touching pwned.
func renderHostilePage(t *testing.T, storeURL, pwned string) string {
	t.Helper()
	b, err := json.Marshal(&Job{Meta: apistore.Meta{Generation: 1}, Spec: Spec{Command: "touch", Args: []string{pwned}}})
	if err != nil {
		t.Fatal(err)
	}
	job := string(b)
	return strings.NewReplacer("{{STORE}}", storeURL, "{{JSON_HEAD}}", strings.TrimSuffix(job, "}"), "{{JSON}}", job).Replace(hostilePage)
}

func TestHostilePagesCannotMakeTheDaemonRunACommand(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx := browser(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"generated token", nil},
		{"insecure-no-token", []string{"-insecure-no-token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var logs syncbuf.Buffer
			d, err := startDaemon(t.Context(), exe, []string{testMainEnv + "=1", "JOBS_TOKEN="}, dir, &logs, time.Minute, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Kill()
			pwned := filepath.Join(dir, "pwned")
			page := renderHostilePage(t, d.url, pwned)
			// From another loopback port, and from a file.
			site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				fmt.Fprint(w, page)
			}))
			defer site.Close()
			file := filepath.Join(t.TempDir(), "hostile.html")
			if err := os.WriteFile(file, []byte(page), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, from := range []string{site.URL + "/", "file://" + file} {
				seen, err := visit(ctx, from)
				if err != nil {
					t.Fatalf("%s: %v", from, err)
				}
				t.Logf("%s saw: %s", from, seen)
			}
			// Every attempt has had its answer: a job it made would be there.
			objs, _, err := storeClient(t, dir, d.url).List(t.Context(), KeyPrefix)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				t.Errorf("a hostile page added %s: %+v", o.Key, o.Value.Spec)
			}
			if _, err := os.Stat(pwned); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a hostile page's command ran: %s exists (%v)", pwned, err)
			}
		})
	}
}

// visit opens url and returns what the page saw once it is done.
func visit(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Steps(chromedp.Navigate(url), chromedp.WaitVisible(chromedp.ID("done")))); err != nil {
		return "", err
	}
	return chromedp.Run(ctx, chromedp.Text(chromedp.ID("done")))
}

// storeClient returns a client of the daemon in dir, with its generated
// token if it has one.
func storeClient(t *testing.T, dir, url string) *httpstore.Client[*Job] {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, TokenFile)); err == nil {
		return dirClient(t, dir, url)
	}
	return tokenClient(t, url, "")
}

// browser starts headless Chromium for the test, or skips it when there
// is none.
func browser(t *testing.T) context.Context {
	path := os.Getenv("CHROMIUM")
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path == "" {
			path, _ = exec.LookPath(name)
		}
	}
	if path == "" {
		t.Skip("skipped: headless Chromium not found (no $CHROMIUM, no chromium on PATH); " +
			"install Debian's chromium package (apt-get install chromium) to run this browser test")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	// Started on a context without a timeout, which would bound the
	// browser's life; each visit has its own.
	if _, err := chromedp.Run(ctx, chromedp.Steps()); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}
