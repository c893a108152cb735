package bench

import (
	"sync"
	"sync/atomic"
	"time"
)

// BacklogResult is what one run of scenario S3 measured. Heap figures are
// live heap after a collection, relative to just before the queue was made;
// the keys themselves are allocated beforehand and not counted.
type BacklogResult struct {
	AddPhase   time.Duration // adding every key
	DrainPhase time.Duration // workers getting and finishing every key
	Queued     int           // keys waiting once the adds were over
	Handed     int           // keys handed out by the drain
	PeakHeap   int64         // bytes held with every key queued
	HeldAfter  int64         // bytes still held once the queue is empty
}

// HeapPerKey is the queue's heap cost of one queued key, in bytes.
func (r BacklogResult) HeapPerKey() float64 { return float64(r.PeakHeap) / float64(r.Queued) }

// Backlog is scenario S3: it makes a queue with newQueue, adds every key
// (all distinct), measures the heap, lets workers drain the queue, and
// measures the heap again while the empty queue is still in use.
func Backlog(newQueue func() Queue, keys []string, workers int) BacklogResult {
	var res BacklogResult
	base := liveHeap()
	q := newQueue()

	start := time.Now()
	for _, key := range keys {
		q.Add(key)
	}
	res.Queued = q.Len()
	res.AddPhase = time.Since(start)
	res.PeakHeap = liveHeap() - base

	var (
		finished atomic.Int64
		drained  = make(chan struct{})
		handed   = make([]int, workers)
		wg       sync.WaitGroup
	)
	start = time.Now()
	for w := range workers {
		wg.Go(func() {
			n := 0
			defer func() { handed[w] = n }()
			for {
				key, ok := q.Get()
				if !ok {
					return
				}
				n++
				q.Done(key)
				if finished.Add(1) == int64(len(keys)) {
					close(drained)
				}
			}
		})
	}
	<-drained
	res.DrainPhase = time.Since(start)
	res.HeldAfter = liveHeap() - base

	q.ShutDown()
	wg.Wait()
	for _, n := range handed {
		res.Handed += n
	}
	return res
}
