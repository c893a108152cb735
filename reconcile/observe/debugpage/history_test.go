package debugpage_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
	"github.com/converge-go/converge/store"
)

// rolledBack is a controller that found its store rolled back.
type rolledBack struct{ fake }

func (r rolledBack) Health() reconcile.Health {
	return reconcile.Health{History: reconcile.History{Changes: 2, Reason: store.RolledBack,
		At: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC), From: 5, To: 2}}
}

// A controller that found its store to be another history shows how many
// times, and the latest's reason, time and revisions, in the JSON and the
// HTML; one that never did shows nothing of it.
func TestAStoreOfAnotherHistoryShowsItsReasonAndRevisions(t *testing.T) {
	h := debugpage.New(debugpage.Options{}, rolledBack{fake{"db"}}, fake{"ok"})
	var p struct {
		Controllers []struct {
			History *struct {
				Changes  int
				Reason   string
				At       string
				From, To int64
			}
		}
	}
	require.NoError(t, json.Unmarshal(get(t, h, "/?format=json").Body.Bytes(), &p))
	require.Len(t, p.Controllers, 2)
	require.NotNil(t, p.Controllers[0].History)
	assert.Equal(t, 2, p.Controllers[0].History.Changes)
	assert.Equal(t, "rolled back", p.Controllers[0].History.Reason)
	assert.Equal(t, "2026-12-07T12:00:00.000Z", p.Controllers[0].History.At)
	assert.Equal(t, [2]int64{5, 2}, [2]int64{p.Controllers[0].History.From, p.Controllers[0].History.To})
	assert.Nil(t, p.Controllers[1].History)

	html := get(t, h, "/").Body.String()
	assert.Contains(t, html, `<span class="history">store histories: <b class="bad">2</b>, latest <b class="bad">rolled back</b> at 2026-12-07T12:00:00.000Z (revision 5 to 2)</span>`)
	assert.Equal(t, 1, strings.Count(html, `class="history"`), "only the controller that found another history shows it")
}
