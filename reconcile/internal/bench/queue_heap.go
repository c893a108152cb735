package bench

import "runtime"

// liveHeap collects garbage and returns the bytes of heap still in use.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
