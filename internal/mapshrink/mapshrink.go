// Package mapshrink gives back the memory of Go maps after a burst. A Go
// map never shrinks: one that held a million keys for a moment keeps their
// slots after they are deleted. The project's per-key maps note their peak
// size as they grow and, once they have fallen to an eighth of it, are
// rebuilt at their size.
package mapshrink

// Floor is the peak size, in entries, at or below which the project's
// per-key maps, slices and slabs are never rebuilt. At 4,096 keys a map of
// keys and their records holds about 0.4 MB: below that, keeping it costs
// less than rebuilding it for the next burst, and a structure that never
// grew past it is never copied.
const Floor = 4096

// Note records m's size in *peak if it is the largest seen since the last
// rebuild.
func Note[K comparable, V any](m map[K]V, peak *int) {
	*peak = max(*peak, len(m))
}

// Shrunk returns m or, if *peak is above floor and m has fallen below an
// eighth of it, a copy of m sized to its entries, setting *peak to that
// size. Copying n entries is paid for by the 7n or more deletions since
// the peak; a map that never grew beyond floor is never copied. The caller
// replaces m with the result and must not use m afterwards.
func Shrunk[K comparable, V any](m map[K]V, peak *int, floor int) map[K]V {
	n := len(m)
	if *peak <= floor || n >= *peak/8 {
		return m
	}
	small := make(map[K]V, n)
	for k, v := range m {
		small[k] = v
	}
	*peak = n
	return small
}
