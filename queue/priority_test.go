package queue

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHigherPriorityFirstFIFOWithin(t *testing.T) {
	q := New(Options[string]{AgingAfter: -1})
	q.AddWith("low1", AddOptions{Priority: PriorityLow})
	q.Add("n1")
	q.AddWith("high1", AddOptions{Priority: PriorityHigh})
	q.AddWith("low2", AddOptions{Priority: PriorityLow})
	q.Add("n2")
	q.AddWith("high2", AddOptions{Priority: PriorityHigh})
	var got []string
	for q.View().Len() > 0 {
		got = append(got, mustGet(t, q))
	}
	require.Equal(t, []string{"high1", "high2", "n1", "n2", "low1", "low2"}, got)
}

// Re-adding a waiting key at a higher priority moves it up; at a lower one
// it keeps its place.
func TestReAddRaisesPriority(t *testing.T) {
	q := New(Options[string]{AgingAfter: -1})
	q.Add("a")
	q.Add("b")
	q.AddWith("b", AddOptions{Priority: 5})
	q.AddWith("a", AddOptions{Priority: -5})
	require.Equal(t, "b", mustGet(t, q))
	require.Equal(t, "a", mustGet(t, q))
}

// A key re-added while processing comes back with the priority of that add,
// not of its previous hand-out.
func TestDirtyKeyTakesNewPriority(t *testing.T) {
	q := New(Options[string]{AgingAfter: -1})
	q.AddWith("a", AddOptions{Priority: PriorityHigh})
	require.Equal(t, "a", mustGet(t, q))
	q.AddWith("a", AddOptions{Priority: PriorityLow})
	q.Add("b")
	q.Done("a")
	require.Equal(t, "b", mustGet(t, q))
	require.Equal(t, "a", mustGet(t, q))
}

// Under a steady stream of high-priority keys, a low-priority key is served
// once its priority gap times AgingAfter keys have been handed out while it
// waited (without aging it would starve).
func TestAgingServesStarvedKey(t *testing.T) {
	const aging = 10
	q := New(Options[string]{AgingAfter: aging})
	q.AddWith("low", AddOptions{Priority: 0})
	// A producer keeps two priority-3 keys ready at all times.
	next := 0
	addHigh := func() {
		q.AddWith(fmt.Sprint("high-", next), AddOptions{Priority: 3})
		next++
	}
	addHigh()
	addHigh()
	handed := 0
	for {
		k := mustGet(t, q)
		q.Done(k)
		if k == "low" {
			break
		}
		handed++
		addHigh()
		require.Less(t, handed, 1000, "the low-priority key starved")
	}
	// It waited behind the two keys ready with it and the keys that became
	// ready during its first (3−0)×10 hand-outs (on an equal virtual
	// position the higher priority goes first), and no more.
	require.Equal(t, 3*aging+2, handed)
}

func TestWithoutAgingLowPriorityWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[string]{AgingAfter: -1})
		q.AddWith("low", AddOptions{Priority: 0})
		for i := range 100 {
			q.AddWith(string(rune('A'+i)), AddOptions{Priority: 3})
			advance(time.Second)
			k := mustGet(t, q)
			require.NotEqual(t, "low", k)
			q.Done(k)
		}
		require.Equal(t, "low", mustGet(t, q))
	})
}

func TestHugePrioritiesDoNotOverflow(t *testing.T) {
	q := New(Options[string]{AgingAfter: 1000})
	q.AddWith("min", AddOptions{Priority: -1 << 62})
	q.Add("zero")
	q.AddWith("max", AddOptions{Priority: 1 << 62})
	require.Equal(t, "max", mustGet(t, q))
	require.Equal(t, "zero", mustGet(t, q))
	require.Equal(t, "min", mustGet(t, q))
}
