package boltstore

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTheCauseTableKeepsTheLatestCausesUpToItsBound: the table keeps the
// causes of the latest min(maxCauses, history) revisions that had one,
// and never more.
func TestTheCauseTableKeepsTheLatestCausesUpToItsBound(t *testing.T) {
	c := newCauseTable(100)
	for rev := int64(1); rev <= 250; rev++ {
		cause := ""
		if rev%2 == 0 {
			cause = fmt.Sprint("cause ", rev)
		}
		c.add(rev, cause)
		require.LessOrEqual(t, len(c.byRev), 100)
	}
	require.Len(t, c.byRev, 100)
	require.Equal(t, "cause 250", c.of(250))
	require.Equal(t, "cause 52", c.of(52), "the oldest kept")
	require.Empty(t, c.of(50), "dropped past the bound")
	require.Empty(t, c.of(251))
	require.Equal(t, maxCauses, newCauseTable(1<<30).limit)
}
