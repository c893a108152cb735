package queue

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHigherPriorityFirstFIFOWithin(t *testing.T) {
	q := New(Config[string]{AgingInterval: -1})
	q.AddWith("low1", AddOptions{Priority: PriorityLow})
	q.Add("n1")
	q.AddWith("high1", AddOptions{Priority: PriorityHigh})
	q.AddWith("low2", AddOptions{Priority: PriorityLow})
	q.Add("n2")
	q.AddWith("high2", AddOptions{Priority: PriorityHigh})
	var got []string
	for q.Len() > 0 {
		got = append(got, mustGet(t, q))
	}
	require.Equal(t, []string{"high1", "high2", "n1", "n2", "low1", "low2"}, got)
}

// Re-adding a waiting key at a higher priority moves it up; at a lower one
// it keeps its place.
func TestReAddRaisesPriority(t *testing.T) {
	q := New(Config[string]{AgingInterval: -1})
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
	q := New(Config[string]{AgingInterval: -1})
	q.AddWith("a", AddOptions{Priority: PriorityHigh})
	require.Equal(t, "a", mustGet(t, q))
	q.AddWith("a", AddOptions{Priority: PriorityLow})
	q.Add("b")
	q.Done("a")
	require.Equal(t, "b", mustGet(t, q))
	require.Equal(t, "a", mustGet(t, q))
}

// Under a steady stream of high-priority keys, a low-priority key is served
// once it has waited its priority gap times the aging interval (without
// aging it would starve).
func TestAgingServesStarvedKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const aging = time.Second
		q := New(Config[string]{AgingInterval: aging})
		start := time.Now()
		q.AddWith("low", AddOptions{Priority: 0})
		// A worker takes one key every 100ms; a producer keeps two
		// priority-3 keys ready at all times.
		next := 0
		addHigh := func() {
			q.AddWith(string(rune('A'+next%26))+time.Now().String(), AddOptions{Priority: 3})
			next++
		}
		addHigh()
		addHigh()
		for {
			k, err := q.Get(context.Background())
			require.NoError(t, err)
			advance(100 * time.Millisecond)
			q.Done(k)
			if k == "low" {
				break
			}
			addHigh()
			require.Less(t, time.Since(start), time.Minute, "the low-priority key starved")
		}
		waited := time.Since(start)
		require.GreaterOrEqual(t, waited, 3*aging-200*time.Millisecond)
		require.LessOrEqual(t, waited, 3*aging+time.Second)
	})
}

func TestWithoutAgingLowPriorityWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Config[string]{AgingInterval: -1})
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
	q := New(Config[string]{AgingInterval: time.Hour})
	q.AddWith("min", AddOptions{Priority: -1 << 62})
	q.Add("zero")
	q.AddWith("max", AddOptions{Priority: 1 << 62})
	require.Equal(t, "max", mustGet(t, q))
	require.Equal(t, "zero", mustGet(t, q))
	require.Equal(t, "min", mustGet(t, q))
}
