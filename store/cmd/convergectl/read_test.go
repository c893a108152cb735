package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/stretchr/testify/require"
)

// parseKeyLine reads a line of list -keys as its documentation says: the
// revision is the last field; a key that starts with a quote is quoted.
func parseKeyLine(t *testing.T, line string) (string, int64) {
	t.Helper()
	i := strings.LastIndexByte(line, ' ')
	require.Positive(t, i, line)
	key := line[:i]
	rev, err := strconv.ParseInt(line[i+1:], 10, 64)
	require.NoError(t, err, line)
	if strings.HasPrefix(key, `"`) {
		key, err = strconv.Unquote(key)
		require.NoError(t, err, line)
	}
	return key, rev
}

// TestListKeysPrintsEachKeyOnOneLineQuotedWhenALineReaderWouldMisreadIt:
// list -keys prints one line per object, from which a reader that splits
// on the last space and unquotes a leading quote gets every key back as it
// is, newlines, spaces, tabs and quotes included; plain keys, non-ASCII
// letters included, are printed as they are.
func TestListKeysPrintsEachKeyOnOneLineQuotedWhenALineReaderWouldMisreadIt(t *testing.T) {
	m, url := serve(t)
	keys := []string{"plain/key", "café/ü", "line\nbreak", "with space", `quote"d`, `"leading`, `back\slash`, "tab\there", "nbsp\u00a0x", "sep\u2028x", "bell\a"}
	revs := map[string]int64{}
	for _, k := range keys {
		obj, err := m.Create(t.Context(), k, value(`1`))
		require.NoError(t, err)
		revs[k] = obj.Revision
	}
	r := runAs(t, url, "", "list", "-keys")
	require.Equal(t, exitOK, r.code, r.stderr)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	require.Len(t, lines, len(keys), r.stdout)
	got := map[string]int64{}
	for _, line := range lines {
		k, rev := parseKeyLine(t, line)
		got[k] = rev
	}
	require.Equal(t, revs, got)
	require.Contains(t, lines, "plain/key "+strconv.FormatInt(revs["plain/key"], 10))
	require.Contains(t, lines, "café/ü "+strconv.FormatInt(revs["café/ü"], 10))
	require.Contains(t, lines, `"line\nbreak" `+strconv.FormatInt(revs["line\nbreak"], 10))
}

// TestWatchWithoutAfterPrintsOnlyChangesToCome: without -after, watch
// starts at the current revision: what was written before it started is
// not printed, what is written after it is.
func TestWatchWithoutAfterPrintsOnlyChangesToCome(t *testing.T) {
	m, url := serve(t)
	_, err := m.Create(t.Context(), "old", value(`1`))
	require.NoError(t, err)
	tick, err := m.Create(t.Context(), "tick", value(`0`))
	require.NoError(t, err)
	t.Setenv("CONVERGE_SERVER", url)
	t.Setenv("CONVERGE_TOKEN", adminToken)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errOut syncbuf.Buffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"watch"}, strings.NewReader(""), cancelOnWrite{&out, cancel}, &errOut)
	}()
	// The watch starts at some revision after tick's creation: update tick,
	// a change each poll, until one is printed (the first printed line ends
	// the watch). Polling, rather than writing as fast as possible, keeps
	// the writes within the store's history while the watch opens.
	var code int
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for running := true; running; {
		tick, err = m.Update(t.Context(), "tick", value(strconv.FormatInt(tick.Revision, 10)), tick.Revision)
		require.NoError(t, err)
		select {
		case code = <-done:
			running = false
		case <-poll.C:
		}
	}
	require.Equal(t, exitOK, code, errOut.String())
	// Changes already on their way when the first ended the watch may
	// follow it: every one is an update of tick.
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		o := decodeObject(t, line)
		require.Equal(t, "updated", o.Type, line)
		require.Equal(t, "tick", o.Key, line)
	}
}
