package debugpage_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
	"github.com/converge-go/converge/reconcile/shard"
	"github.com/converge-go/converge/store/checkpoint"
)

// hostileText is what stored state and errors may hold: a terminal
// escape, BEL, CR, DEL, a C1 control, bidi overrides and isolates, a
// zero-width space, markup and bytes that are not UTF-8.
const hostileText = "\x1b[31mred\x07\r\u202egnp.exe\u2066x\u2069\u200b\x7f\u009b<b>\xff\xfe"

// hostileError is a 1.6 MB error of hostile text.
var hostileError = strings.Repeat(hostileText+" ", 1600<<10/(len(hostileText)+1))

// hostileKey is a key at the store's longest (1,000 bytes) of hostile
// text.
var hostileKey = strings.Repeat(hostileText, 1000/len(hostileText))

// hostile is a controller whose every text (its name, health, keys,
// errors, dependencies, checkpoint and shard) is hostile.
type hostile struct{}

func (hostile) Name() string { return "ctl" + hostileText }
func (hostile) Health() reconcile.Health {
	return reconcile.Health{Degraded: []string{"store: " + hostileError, hostileError},
		Stuck: []reconcile.KeyState{{Key: hostileKey, State: queue.Processing, Since: time.Now().Add(-time.Hour)}},
		Stale: 1, StaleKeys: []string{hostileKey}, Refused: 1, RefusedKeys: []string{hostileKey},
		Deleting: 1, DeletingKeys: []string{hostileKey}, Dependencies: hostileDependencies(),
		Checkpoint: checkpoint.Status{Enabled: true, Active: true, Seen: time.Now(), Refused: hostileError,
			Failures: 1, LastError: hostileError}}
}
func (hostile) Inspect(reconcile.KeyQuery) reconcile.KeyPage {
	return reconcile.KeyPage{Matched: 1, States: map[queue.State]int{}, Keys: []reconcile.KeyState{{
		Key: hostileKey, LastOutcome: reconcile.Failure, LastError: hostileError, LastAt: time.Now(),
		Triggers: []string{"source " + hostileText}, LastTriggers: []string{"source " + hostileKey},
		DeletingSince: time.Now(), LastRevision: 3}}}
}
func (hostile) Sharder() reconcile.Sharder {
	return statusSharder{shard.Status{ID: hostileText, Member: true, Members: []string{hostileText, hostileKey},
		Buckets: []shard.BucketStatus{{Bucket: 0, Owner: hostileKey, Target: hostileText, Epoch: 1}}}}
}

func hostileDependencies() []dependency.State {
	return []dependency.State{{Name: hostileText, Down: true, Since: time.Now(), Failures: 2, LastError: hostileError}}
}

// checkDisplayedPage checks that an HTML page holds only valid UTF-8, no
// control character but the template's line feeds, no format (bidi)
// character or separator, and is at most limit bytes.
func checkDisplayedPage(t *testing.T, html string, limit int) {
	t.Helper()
	require.True(t, utf8.ValidString(html), "the page is not valid UTF-8")
	for i, r := range html {
		if unicode.Is(unicode.Cc, r) && r != '\n' || unicode.Is(unicode.Cf, r) || unicode.In(r, unicode.Zl, unicode.Zp) {
			t.Fatalf("the page holds %U at byte %d: …%q…", r, i, html[max(0, i-80):min(len(html), i+40)])
		}
	}
	require.LessOrEqual(t, len(html), limit, "the page is %d bytes", len(html))
}

// Every text the page did not write (the controller's name, its degraded
// reasons and store status, stuck, stale, refused and deleting keys, its
// dependencies' names and errors and the process's, its checkpoint's
// refusal and error, its shard's replicas, its keys, their errors,
// triggers and log attributes, and the query's prefix and controller)
// shows as visible characters: no control, bidi or other format
// character, no invalid UTF-8 reaches the HTML, each shows escaped
// (ESC as \x1b, U+202E as \u202e, a byte not UTF-8 as \xff); and
// 1.6 MB errors and 1,000-byte keys are cut, the whole one click away,
// the page bounded. The JSON keeps each value as it is.
func TestEveryTextThePageDidNotWriteShowsAsVisibleBoundedCharacters(t *testing.T) {
	synctest.Test(t, testEveryTextShowsAsVisibleBoundedCharacters)
}

func testEveryTextShowsAsVisibleBoundedCharacters(t *testing.T) {
	h := debugpage.New(debugpage.Options{Dependencies: hostileDependencies}, hostile{})
	html := get(t, h, "/?prefix="+url.QueryEscape(hostileText)).Body.String()
	// Nine texts of 1.6 MB and about twenty of hostile keys: the page
	// was 30 MB before the rule.
	checkDisplayedPage(t, html, 512<<10)
	for _, want := range []string{
		`<span class="esc">\x1b</span>[31mred<span class="esc">\x07</span><span class="esc">\r</span>` +
			`<span class="esc">\u202e</span>gnp.exe<span class="esc">\u2066</span>x<span class="esc">\u2069</span>` +
			`<span class="esc">\u200b</span><span class="esc">\x7f</span><span class="esc">\u009b</span>` +
			`&lt;b&gt;<span class="esc">\xff</span><span class="esc">\xfe</span>`,
		`data-key="\x1b[31mred\x07\r\u202egnp.exe`,
		`<h2>ctl<span class="esc">\x1b</span>`,
		`<input name="prefix" value="\x1b[31mred`,
		`<option>ctl\x1b[31mred`,
	} {
		require.Contains(t, html, want)
	}
	// Each hostile error (store status, two degraded reasons, two
	// dependencies, the checkpoint's refusal and error, the key's error)
	// and the long keys and log attributes are cut, the whole a click
	// away.
	assert.GreaterOrEqual(t, strings.Count(html, `<details class="cut">`), 8+8)
	assert.Contains(t, html, `more bytes); the JSON has the whole</span></div></details>`)

	none := get(t, h, "/?controller="+url.QueryEscape(hostileKey)).Body.String()
	checkDisplayedPage(t, none, 64<<10)
	assert.Contains(t, none, `no controller named <code><details class="cut">`)

	var p struct {
		Controllers []struct {
			Keys []struct{ Key, LastError string }
		}
	}
	require.NoError(t, json.Unmarshal(get(t, h, "/?format=json").Body.Bytes(), &p))
	require.Len(t, p.Controllers, 1)
	require.Len(t, p.Controllers[0].Keys, 1)
	// encoding/json writes each byte that is not UTF-8 as U+FFFD, as
	// converting to runes does.
	assert.True(t, string([]rune(hostileKey)) == p.Controllers[0].Keys[0].Key, "the JSON's key")
	assert.Len(t, p.Controllers[0].Keys[0].LastError, len(string([]rune(hostileError))), "the JSON's error, whole")
}

// A controller is selected by its name or, for a name the page escapes,
// by the name as its form shows it.
func TestAControllerWithAnEscapedNameIsSelectedByItsDisplayedName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := debugpage.New(debugpage.Options{}, hostile{}, fake{"plain"})
		for _, name := range []string{"ctl" + hostileText, `ctl\x1b[31mred\x07\r\u202egnp.exe\u2066x\u2069\u200b\x7f\u009b<b>\xff\xfe`} {
			html := get(t, h, "/?controller="+url.QueryEscape(name)).Body.String()
			assert.Contains(t, html, `<option selected>ctl\x1b[31mred`)
			assert.Equal(t, 1, strings.Count(html, `<section class="controller"`), name)
		}
	})
}
