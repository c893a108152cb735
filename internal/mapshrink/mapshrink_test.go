package mapshrink_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/internal/mapshrink"
)

// TestShrunkRebuildsOnlyBelowAnEighthOfAPeakAboveTheFloor: the map is
// kept while it holds an eighth of its peak or more, or while its peak is
// at or below the floor; otherwise it is rebuilt with every entry left and
// its peak becomes its size.
func TestShrunkRebuildsOnlyBelowAnEighthOfAPeakAboveTheFloor(t *testing.T) {
	m := map[int]string{}
	peak := 0
	for i := range 1000 {
		m[i] = fmt.Sprint(i)
		mapshrink.Note(m, &peak)
	}
	require.Equal(t, 1000, peak)
	for i := range 875 {
		delete(m, i)
		m = mapshrink.Shrunk(m, &peak, 100)
	}
	require.Equal(t, 1000, peak, "125 of 1000 is an eighth: kept")
	delete(m, 875)
	m = mapshrink.Shrunk(m, &peak, 100)
	require.Equal(t, 124, peak, "below an eighth: rebuilt")
	require.Len(t, m, 124)
	for i := 876; i < 1000; i++ {
		require.Equal(t, fmt.Sprint(i), m[i])
	}
	for i := 876; i < 990; i++ {
		delete(m, i)
		m = mapshrink.Shrunk(m, &peak, 124)
	}
	require.Equal(t, 124, peak, "a peak at the floor: kept")
	require.Len(t, m, 10)
}

// A map that held many keys for a moment gives their slots back as they
// are deleted: it is rebuilt each time it falls below an eighth of its
// peak, until its peak is at or below the floor.
func ExampleShrunk() {
	const floor = 1024
	pending := map[string]int{}
	peak := 0
	for i := range 100_000 {
		pending[fmt.Sprint(i)] = i
		mapshrink.Note(pending, &peak)
	}
	for i := range 99_990 {
		delete(pending, fmt.Sprint(i))
		before := peak
		pending = mapshrink.Shrunk(pending, &peak, floor)
		if peak != before {
			fmt.Println("rebuilt at", len(pending), "keys")
		}
	}
	fmt.Println(len(pending), "keys left")
	// Output:
	// rebuilt at 12499 keys
	// rebuilt at 1561 keys
	// rebuilt at 194 keys
	// 10 keys left
}
