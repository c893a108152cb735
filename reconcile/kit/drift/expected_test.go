package drift

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// What is expected of keys is held for the keys of the latest listing and
// those reported since it began, no others: memory follows keys alive,
// not keys ever reported or listed.
func TestWhatIsExpectedIsHeldForKeysAliveOnly(t *testing.T) {
	var x expected
	require.Empty(t, x.pollListed(map[string]string{"a": "1"}, x.listing(), false))
	for i := range 1000 {
		x.reported(fmt.Sprint("made/", i), "1", true)
		x.reported(fmt.Sprint("gone/", i), "", false)
	}
	require.Len(t, x.pollListed(map[string]string{"a": "1"}, x.listing(), false), 1000, "made, and gone by the poll")
	require.Equal(t, map[string]expectation{"a": {fingerprint: "1", present: true}}, x.keys)

	mark := x.listing()
	x.reported("late", "", false) // while the poll lists
	require.Empty(t, x.pollListed(map[string]string{"a": "1"}, mark, false))
	require.Len(t, x.keys, 2, "a report newer than the listing stays")
	require.Empty(t, x.pollListed(map[string]string{"a": "1"}, x.listing(), false))
	require.Len(t, x.keys, 1, "until the next poll")
}
