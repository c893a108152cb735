package debugpage_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
)

// refusing is a controller that has refused keys outside its view.
type refusing struct{ fake }

func (r refusing) Health() reconcile.Health {
	return reconcile.Health{Refused: 5, RefusedKeys: []string{"", "roles/<b>app</b>", "x\x00y"}}
}

// The refused keys of Health show in the JSON as they are and in the
// HTML quoted, so that an empty key shows, escaped, and a NUL in one as
// its marked escape; a controller that refused none shows 0.
func TestRefusedKeysShowInJSONAndQuotedAndEscapedInHTML(t *testing.T) {
	h := debugpage.New(debugpage.Options{}, refusing{fake{"db"}}, fake{"ok"})
	rec := get(t, h, "/?format=json")
	var p struct {
		Controllers []struct {
			Refused     int
			RefusedKeys []string
		}
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p))
	require.Len(t, p.Controllers, 2)
	assert.Equal(t, 5, p.Controllers[0].Refused)
	assert.Equal(t, []string{"", "roles/<b>app</b>", "x\x00y"}, p.Controllers[0].RefusedKeys)
	assert.Equal(t, 0, p.Controllers[1].Refused)
	assert.Equal(t, []string{}, p.Controllers[1].RefusedKeys)

	html := get(t, h, "/").Body.String()
	assert.Contains(t, html, `<span class="refused">refused keys: <b class="bad">5</b> <code>""</code>`+
		` <code>"roles/&lt;b&gt;app&lt;/b&gt;"</code> <code>"x<span class="esc">\x00</span>y"</code></span>`)
	assert.Contains(t, html, `<span class="refused">refused keys: 0</span>`)
}
