package reconcile

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// refusedLines counts the log lines that name a refused key, by key, and
// the lines that say further keys go unlogged.
func refusedLines(buf *syncbuf.Buffer) (byKey map[string]int, unlogged int) {
	byKey = map[string]int{}
	for _, line := range jsonLines(buf) {
		msg := fmt.Sprint(line["msg"])
		switch key, ok := line["key"].(string); {
		case ok && strings.Contains(msg, "refused"):
			byKey[key]++
		case strings.Contains(msg, "not logged"):
			unlogged++
		}
	}
	return byKey, unlogged
}

// The tester's case: a controller of "databases/" whose channel source
// sends "roles/app" (a mapper's mistake), a key the store holds. The key
// is refused, never reconciled (as Deleted least of all), logged once
// however often it comes, counted each time in Health and Metrics, and
// the controller goes on reconciling its own keys.
func TestAKeyOutsideThePrefixFromASourceIsRefusedNotReconciledAsDeleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "roles/app", &item{Want: 1})
		put(t, s, "databases/app", &item{Want: 2})
		var buf syncbuf.Buffer
		events := make(chan string, 4)
		rec, m := &recorder{}, &countingMetrics{}
		c, err := New[*item](s, rec, Options[*item]{Name: "databases", Prefix: "databases/",
			Sources: []Source{FromChannel(events)}, Metrics: m,
			Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
		require.NoError(t, err)
		defer start(t, c)()
		synctest.Wait()
		rec.reset()

		events <- "roles/app"
		events <- "roles/app"
		events <- "databases/app"
		synctest.Wait()
		require.Zero(t, rec.count("roles/app"), "a key outside the prefix was reconciled")
		require.Equal(t, 1, rec.count("databases/app"), "the source's key of the view was not reconciled")
		h := c.Health()
		require.Equal(t, 2, h.Refused)
		require.Equal(t, []string{"roles/app"}, h.RefusedKeys)
		require.Equal(t, 2, m.get("refused"), "Metrics.KeyRefused counts each refusal")
		lines, _ := refusedLines(&buf)
		require.Equal(t, map[string]int{"roles/app": 1}, lines, "a refused key is logged once")
	})
}

// Enqueue refuses a key outside the view with an error matching
// ErrInvalid, for every way a key can be outside it: under another
// prefix, the prefix itself without its slash, empty, too long, not
// UTF-8, holding a NUL. A key of the view is queued and nil returned.
func TestEnqueueRefusesEveryKeyOutsideTheViewWithErrInvalid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		c, err := New[*item](store.NewMemory[*item](), rec, Options[*item]{Name: "view", Prefix: "in/"})
		require.NoError(t, err)
		defer start(t, c)()
		outside := []string{"out/a", "in", "", "in/" + strings.Repeat("x", store.MaxKeyLen), "in/\xff", "in/a\x00b"}
		for _, key := range outside {
			err := c.Enqueue(key)
			require.ErrorIs(t, err, ErrInvalid, "Enqueue(%q)", key)
			require.ErrorIs(t, err, store.ErrInvalid, "Enqueue(%q)", key)
		}
		require.NoError(t, c.Enqueue("in/a"))
		synctest.Wait()
		for _, key := range outside {
			require.Zero(t, rec.count(key), "%q was reconciled", key)
		}
		require.Equal(t, 1, rec.count("in/a"))
		req, _ := rec.last("in/a")
		require.True(t, req.Deleted, "a key of the view the store never held is reconciled as deleted")
		require.Zero(t, req.Object, "with the zero Object")
		h := c.Health()
		require.Equal(t, len(outside), h.Refused)
		require.Len(t, h.RefusedKeys, len(outside))
		cut := fmt.Sprintf("… (%d bytes)", 3+store.MaxKeyLen)
		require.Contains(t, h.RefusedKeys, "in/"+strings.Repeat("x", refusedKeyLen-3)+cut, "a long key is shown cut short")
	})
}

// However many distinct keys are refused, the controller remembers a
// bounded number of them and logs each remembered one once, then says
// once that it stops logging; every refusal is still counted.
func TestRefusedKeysAreRememberedAndLoggedWithinABound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf syncbuf.Buffer
		c, err := New[*item](store.NewMemory[*item](), &recorder{}, Options[*item]{Name: "bound", Prefix: "in/",
			Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
		require.NoError(t, err)
		const n = 4 * maxRememberedRefusals
		for i := range n {
			_ = c.Enqueue(fmt.Sprintf("out/%05d/%s", i, strings.Repeat("y", 2*store.MaxKeyLen)))
			_ = c.Enqueue(fmt.Sprintf("out/%05d", i))
		}
		h := c.Health()
		require.Equal(t, 2*n, h.Refused, "every refusal is counted")
		require.Len(t, h.RefusedKeys, maxRefusedKeys)
		c.refused.mu.Lock()
		remembered := len(c.refused.keys)
		size := 0
		for key := range c.refused.keys {
			size += len(key)
		}
		c.refused.mu.Unlock()
		require.Equal(t, maxRememberedRefusals, remembered)
		require.Less(t, size, maxRememberedRefusals*(refusedKeyLen+32), "remembered keys are cut short")
		lines, unlogged := refusedLines(&buf)
		require.Equal(t, 1, unlogged, "the end of logging is said once")
		logged := 0
		for key, times := range lines {
			require.Equal(t, 1, times, "%s logged more than once", key)
			logged++
		}
		require.Equal(t, maxRememberedRefusals, logged, "each remembered key is logged once, no other")
		require.Equal(t, 0, c.q().View().Len(), "a refused key was queued")
	})
}
