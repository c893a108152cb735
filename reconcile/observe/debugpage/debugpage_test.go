package debugpage_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
)

// scene runs f with a controller whose keys are in every state: app/ok-1
// and app/ok-2 converged (idle), app/fail failing with xss as its error
// (delayed an hour), app/block processing (blocked), db/wait-1 and
// db/wait-2 waiting behind it (one worker). Time is synctest's.
func scene(t *testing.T, xss string, f func(t *testing.T, w *world, h *debugpage.Handler)) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, "apps", 1, map[string]string{"app/ok-1": "ok", "app/ok-2": "ok", "app/fail": "fail:" + xss})
		defer w.close()
		// Fake time moves half a second between the steps, so that the
		// keys' changes have distinct ages.
		synctest.Wait()
		time.Sleep(500 * time.Millisecond)
		w.put(t, map[string]string{"app/block": "block"})
		synctest.Wait()
		time.Sleep(500 * time.Millisecond)
		w.put(t, map[string]string{"db/wait-1": "ok"})
		w.put(t, map[string]string{"db/wait-2": "ok"})
		synctest.Wait()
		time.Sleep(500 * time.Millisecond)
		f(t, w, debugpage.New(debugpage.Options{IsLeader: func() bool { return true },
			Term: func() (int64, bool) { return 42, true }}, w.c))
	})
}

// get serves target and returns the response.
func get(t *testing.T, h http.Handler, target string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	return rec
}

// page is the JSON the handler serves, as a tool reads it.
type page struct {
	Generated   string
	Leader      *bool
	Term        *int64
	Controllers []struct {
		Name      string
		Synced    bool
		Store     string
		Revision  int64
		Workers   int
		Degraded  []string
		Stale     int
		StaleKeys []string
		States    map[string]int
		Matched   int
		Page      int
		Pages     int
		Keys      []map[string]any
	}
}

func getJSON(t *testing.T, h http.Handler, target string) page {
	t.Helper()
	rec := get(t, h, target)
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var p page
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p))
	return p
}

func keysOf(p page) []string {
	var out []string
	for _, k := range p.Controllers[0].Keys {
		out = append(out, k["key"].(string))
	}
	return out
}

func TestJSONNamesStatesAndOutcomesAndWritesTimesAsRFC3339AndDurationsAsText(t *testing.T) {
	scene(t, "connection refused", func(t *testing.T, w *world, h *debugpage.Handler) {
		p := getJSON(t, h, "/debug/converge/?format=json")
		require.Len(t, p.Controllers, 1)
		c := p.Controllers[0]
		assert.Equal(t, "apps", c.Name)
		assert.True(t, c.Synced)
		assert.Equal(t, "ok", c.Store)
		assert.Equal(t, 1, c.Workers)
		assert.Equal(t, w.c.Health().Revision, c.Revision)
		assert.Equal(t, map[string]int{"idle": 2, "delayed": 1, "processing": 1, "waiting": 2}, c.States)
		require.NotNil(t, p.Leader)
		assert.True(t, *p.Leader)
		require.NotNil(t, p.Term)
		assert.EqualValues(t, 42, *p.Term)
		_, err := time.Parse(time.RFC3339, p.Generated)
		require.NoError(t, err)

		byKey := map[string]map[string]any{}
		for _, k := range c.Keys {
			byKey[k["key"].(string)] = k
		}
		fail := byKey["app/fail"]
		assert.Equal(t, "delayed", fail["state"])
		assert.EqualValues(t, 1, fail["retries"])
		assert.Equal(t, "error", fail["lastOutcome"])
		assert.Equal(t, "connection refused", fail["lastError"])
		next, err := time.Parse(time.RFC3339, fail["nextRetry"].(string))
		require.NoError(t, err)
		failedAt, err := time.Parse(time.RFC3339, fail["lastAt"].(string))
		require.NoError(t, err)
		assert.Equal(t, time.Hour, next.Sub(failedAt).Round(time.Second), "the next retry is the backoff after the failure")
		assert.Equal(t, "1.5s", fail["pendingFor"], "a duration is text")
		assert.Equal(t, []any{"listed"}, fail["lastTriggers"])
		assert.Equal(t, []any{"retry"}, fail["triggers"])
		assert.Equal(t, fmt.Sprintf("controller=apps key=app/fail revision=%d", int64(fail["lastRevision"].(float64))), fail["log"])

		ok := byKey["app/ok-1"]
		assert.Equal(t, "idle", ok["state"])
		assert.Equal(t, "success", ok["lastOutcome"])
		assert.Equal(t, "1.5s", ok["sinceSuccess"])
		assert.NotContains(t, ok, "lastError", "empty fields are left out")
		assert.NotContains(t, ok, "nextRetry")

		assert.Equal(t, "processing", byKey["app/block"]["state"])
		assert.Contains(t, byKey["app/block"], "processingSince")
		assert.Equal(t, "waiting", byKey["db/wait-1"]["state"])
		assert.Equal(t, []any{"created"}, byKey["db/wait-1"]["triggers"])
	})
}

func TestFiltersByStateAndPrefixAndCountsStatesUnderThePrefix(t *testing.T) {
	scene(t, "x", func(t *testing.T, w *world, h *debugpage.Handler) {
		p := getJSON(t, h, "/?format=json&state=waiting&state=processing")
		assert.Equal(t, []string{"app/block", "db/wait-1", "db/wait-2"}, keysOf(p))
		assert.Equal(t, 3, p.Controllers[0].Matched)

		p = getJSON(t, h, "/?format=json&state=idle,delayed&prefix=app/")
		assert.Equal(t, []string{"app/fail", "app/ok-1", "app/ok-2"}, keysOf(p))
		assert.Equal(t, map[string]int{"idle": 2, "delayed": 1, "processing": 1, "waiting": 0}, p.Controllers[0].States)

		p = getJSON(t, h, "/?format=json&prefix=db/")
		assert.Equal(t, []string{"db/wait-1", "db/wait-2"}, keysOf(p))

		p = getJSON(t, h, "/?format=json&prefix=nothing/")
		assert.Empty(t, keysOf(p))
		assert.Equal(t, 1, p.Controllers[0].Pages, "an empty result is one empty page")

		p = getJSON(t, h, "/?format=json&state=bogus&sort=bogus&page=-3&size=x")
		assert.Len(t, keysOf(p), 6, "bad parameters fall back to their defaults")
	})
}

func TestSortsByKeyStateOutcomeRetriesAndPendingSince(t *testing.T) {
	scene(t, "x", func(t *testing.T, w *world, h *debugpage.Handler) {
		all := []string{"app/block", "app/fail", "app/ok-1", "app/ok-2", "db/wait-1", "db/wait-2"}
		assert.Equal(t, all, keysOf(getJSON(t, h, "/?format=json")))
		assert.Equal(t, []string{"db/wait-2", "db/wait-1", "app/ok-2", "app/ok-1", "app/fail", "app/block"},
			keysOf(getJSON(t, h, "/?format=json&desc=true")))
		assert.Equal(t, []string{"app/block", "db/wait-1", "db/wait-2", "app/fail", "app/ok-1", "app/ok-2"},
			keysOf(getJSON(t, h, "/?format=json&sort=state")), "processing, waiting, delayed, idle")
		assert.Equal(t, []string{"app/fail", "app/ok-1", "app/ok-2", "app/block", "db/wait-1", "db/wait-2"},
			keysOf(getJSON(t, h, "/?format=json&sort=outcome")), "error before success, never reconciled last")
		assert.Equal(t, "app/fail", keysOf(getJSON(t, h, "/?format=json&sort=retries"))[0], "most retries first")
		// app/fail was listed first and never converged; app/block and the
		// db keys were created later, in that order.
		assert.Equal(t, []string{"app/fail", "app/block", "db/wait-1", "db/wait-2", "app/ok-1", "app/ok-2"},
			keysOf(getJSON(t, h, "/?format=json&sort=pending")), "oldest pending change first, none last")
	})
}

// sort=outcome lists the keys that need a person first: a transient
// error, then a terminal failure, then a success, then a key never
// reconciled.
func TestSortByOutcomePutsFailuresBeforeSuccesses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, "outcomes", 1, map[string]string{"a/ok": "ok", "b/terminal": "terminal:bad spec", "c/fail": "fail:down"})
		defer w.close()
		synctest.Wait()
		w.put(t, map[string]string{"0/block": "block"}) // holds the one worker
		synctest.Wait()
		w.put(t, map[string]string{"d/never": "ok"})
		synctest.Wait()
		h := debugpage.New(debugpage.Options{}, w.c)
		assert.Equal(t, []string{"c/fail", "b/terminal", "a/ok", "0/block", "d/never"},
			keysOf(getJSON(t, h, "/?format=json&sort=outcome")))
	})
}

func TestPaginatesWithoutOverlapOrGap(t *testing.T) {
	scene(t, "x", func(t *testing.T, w *world, h *debugpage.Handler) {
		var seen []string
		for n := 1; n <= 3; n++ {
			p := getJSON(t, h, fmt.Sprintf("/?format=json&size=2&page=%d&sort=state", n))
			c := p.Controllers[0]
			assert.Equal(t, 3, c.Pages)
			assert.Equal(t, n, c.Page)
			assert.Equal(t, 6, c.Matched)
			assert.Len(t, c.Keys, 2)
			seen = append(seen, keysOf(p)...)
		}
		assert.Equal(t, []string{"app/block", "db/wait-1", "db/wait-2", "app/fail", "app/ok-1", "app/ok-2"}, seen)
		assert.Empty(t, keysOf(getJSON(t, h, "/?format=json&size=2&page=4")), "past the last page: no keys")
		assert.Empty(t, keysOf(getJSON(t, h, "/?format=json&size=1000&page=9223372036854775807")), "a huge page number is no panic")

		html := get(t, h, "/?size=2&page=2").Body.String()
		assert.Contains(t, html, "page 2 of 3")
		assert.Contains(t, html, `class="prev" href="?size=2"`)
		assert.Contains(t, html, `class="next" href="?page=3&amp;size=2"`)
	})
}

func TestDefaultPageSizeIsAHundred(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		values := map[string]string{}
		for i := range 250 {
			values[fmt.Sprintf("k%03d", i)] = "ok"
		}
		w := newWorld(t, "many", 4, values)
		defer w.close()
		synctest.Wait()
		p := getJSON(t, debugpage.New(debugpage.Options{}, w.c), "/?format=json&page=3")
		c := p.Controllers[0]
		assert.Equal(t, 3, c.Pages)
		assert.Len(t, c.Keys, 50)
		assert.Equal(t, "k200", c.Keys[0]["key"])
		assert.Nil(t, p.Leader, "no IsLeader: leadership is not shown")
		assert.Nil(t, p.Term, "no Term: no term is shown")
	})
}

func TestUserDataIsEscapedInHTML(t *testing.T) {
	const xss = `<script>alert("pwned")</script><img src=x onerror=alert(1)>`
	synctest.Test(t, func(t *testing.T) {
		key := `app/<script>alert(1)</script>`
		w := newWorld(t, `ctl<b>`, 1, map[string]string{key: "fail:" + xss})
		defer w.close()
		synctest.Wait()
		h := debugpage.New(debugpage.Options{LogURL: func(c, k string, rev int64) string {
			return "javascript:alert(1)"
		}}, w.c)
		rec := get(t, h, "/?prefix="+url.QueryEscape(`<script>`)+"&controller="+url.QueryEscape(`ctl<b>`))
		body := rec.Body.String()
		assert.NotContains(t, body, "<script>")
		assert.NotContains(t, body, "<img")
		assert.NotContains(t, body, "<b>")
		assert.NotContains(t, body, "javascript:")
		assert.Contains(t, rec.Header().Get("Content-Security-Policy"), "default-src 'none'")

		body = get(t, h, "/").Body.String()
		assert.NotContains(t, body, "<script>")
		assert.NotContains(t, body, "<img")
		assert.Contains(t, body, "app/&lt;script&gt;alert(1)&lt;/script&gt;", "the key is shown, as text")
		assert.Contains(t, body, "&lt;img src=x onerror=alert(1)&gt;", "the error is shown, as text")

		p := getJSON(t, h, "/?format=json")
		assert.Equal(t, key, p.Controllers[0].Keys[0]["key"], "JSON carries the key as it is")
		assert.Equal(t, xss, p.Controllers[0].Keys[0]["lastError"])
		assert.NotContains(t, p.Controllers[0].Keys[0], "logURL", "only http and https links are kept")
	})
}

func TestRefusesEveryMethodButGetAndHead(t *testing.T) {
	h := debugpage.New(debugpage.Options{})
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(m, "/", strings.NewReader("x")))
		assert.Equal(t, http.StatusMethodNotAllowed, rec.Code, m)
		assert.Equal(t, "GET, HEAD", rec.Header().Get("Allow"))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/", nil))
	assert.Equal(t, http.StatusOK, rec.Code)
}

func TestAnswersJSONToAnAcceptHeaderAndHTMLToBrowsers(t *testing.T) {
	h := debugpage.New(debugpage.Options{})
	assert.Equal(t, "application/json", get(t, h, "/", "Accept", "application/json").Header().Get("Content-Type"))
	assert.Equal(t, "text/html; charset=utf-8",
		get(t, h, "/", "Accept", "text/html,application/xhtml+xml,application/json;q=0.9").Header().Get("Content-Type"))
	assert.Equal(t, "text/html; charset=utf-8",
		get(t, h, "/?format=html", "Accept", "application/json").Header().Get("Content-Type"), "format wins over Accept")
}

// fake is a Controller in a state a live one reaches only through faults.
type fake struct{ name string }

func (f fake) Name() string { return f.name }
func (f fake) Health() reconcile.Health {
	return reconcile.Health{Degraded: []string{"store: etcd: unreachable", "source 0: broken"},
		Stuck: []reconcile.KeyState{{Key: "k/stuck", State: queue.Processing, Since: time.Now().Add(-90 * time.Minute)}},
		Stale: 20, StaleKeys: []string{"k/a"}, Revision: 7, Workers: 3}
}
func (f fake) Inspect(q reconcile.KeyQuery) reconcile.KeyPage {
	return reconcile.KeyPage{States: map[queue.State]int{}}
}

// It runs in a synctest bubble, so that the fake's clock and the page's
// read the same instant.
func TestShowsDegradedStoreStuckAndStaleOfEachControllerAndSelectsOneByName(t *testing.T) {
	synctest.Test(t, testShowsDegradedStoreStuckAndStale)
}

func testShowsDegradedStoreStuckAndStale(t *testing.T) {
	var none *reconcile.Controller[int]
	h := debugpage.New(debugpage.Options{}, fake{"one"}, none, fake{"two"})
	p := getJSON(t, h, "/?format=json")
	require.Len(t, p.Controllers, 2, "a nil controller is ignored")
	c := p.Controllers[0]
	assert.Equal(t, "etcd: unreachable", c.Store)
	assert.Equal(t, []string{"store: etcd: unreachable", "source 0: broken"}, c.Degraded)
	assert.Equal(t, 20, c.Stale)
	assert.Equal(t, []string{"k/a"}, c.StaleKeys)
	assert.Equal(t, 3, c.Workers)
	assert.Contains(t, get(t, h, "/?format=json").Body.String(), `"running": "1h30m0s"`)

	p = getJSON(t, h, "/?format=json&controller=two")
	require.Len(t, p.Controllers, 1)
	assert.Equal(t, "two", p.Controllers[0].Name)

	html := get(t, h, "/").Body.String()
	assert.Contains(t, html, "stuck: <code>k/stuck</code> running for 1h30m0s")
	assert.Contains(t, html, "degraded: source 0: broken")
}

// deletingFake is a controller with a key being deleted for an hour.
type deletingFake struct{ fake }

func (f deletingFake) Health() reconcile.Health {
	return reconcile.Health{Deleting: 1, DeletingKeys: []string{"k/gone"}}
}
func (f deletingFake) Inspect(reconcile.KeyQuery) reconcile.KeyPage {
	return reconcile.KeyPage{Matched: 1, States: map[queue.State]int{}, Keys: []reconcile.KeyState{
		{Key: "k/gone", DeletingSince: time.Now().Add(-time.Hour), LastOutcome: reconcile.Failure, LastError: "drop: busy"}}}
}

// TestKeysBeingDeletedShowWithHowLongAndTheirCleanupsError: a key marked
// for deletion whose cleanup keeps failing is named in the controller's
// health and shown, in its row, deleting for how long, beside the last
// error, in HTML and JSON. It runs in a synctest bubble, so that the
// fake's clock and the page's read the same instant.
func TestKeysBeingDeletedShowWithHowLongAndTheirCleanupsError(t *testing.T) {
	synctest.Test(t, testKeysBeingDeleted)
}

func testKeysBeingDeleted(t *testing.T) {
	h := debugpage.New(debugpage.Options{}, deletingFake{fake{"dbs"}})
	body := get(t, h, "/").Body.String()
	assert.Contains(t, body, `deleting: <b class="bad">1</b> <code>k/gone</code>`)
	assert.Contains(t, body, `deleting for 1h0m0s`)
	assert.Contains(t, body, "drop: busy")
	var page struct {
		Controllers []struct {
			Deleting     int
			DeletingKeys []string
			Keys         []struct{ DeletingFor string }
		}
	}
	require.NoError(t, json.Unmarshal(get(t, h, "/?format=json").Body.Bytes(), &page))
	require.Len(t, page.Controllers, 1)
	c := page.Controllers[0]
	assert.Equal(t, 1, c.Deleting)
	assert.Equal(t, []string{"k/gone"}, c.DeletingKeys)
	require.Len(t, c.Keys, 1)
	assert.Equal(t, "1h0m0s", c.Keys[0].DeletingFor)
}
