package bench

import (
	"sync"
	"sync/atomic"
	"time"
)

// RetryResult is what one run of scenario S5 measured.
type RetryResult struct {
	Wall     time.Duration // first Add until every key succeeded
	Attempts int64         // keys handed out in all
}

// Retry is scenario S5: every key is added once, and workers fail each key
// failures times (AddRateLimited, then Done) before it succeeds (Forget,
// then Done).
func Retry(q Queue, keys []string, failures, workers int) RetryResult {
	var (
		failed    = make([]int, len(keys)) // touched only by the worker holding the key
		attempts  = make([]int64, workers)
		succeeded atomic.Int64
		allDone   = make(chan struct{})
		wg        sync.WaitGroup
	)
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			var n int64
			defer func() { attempts[w] = n }()
			for {
				key, ok := q.Get()
				if !ok {
					return
				}
				n++
				i := KeyIndex(key)
				if failed[i] < failures {
					failed[i]++
					q.AddRateLimited(key)
					q.Done(key)
					continue
				}
				q.Forget(key)
				q.Done(key)
				if succeeded.Add(1) == int64(len(keys)) {
					close(allDone)
				}
			}
		})
	}
	for _, key := range keys {
		q.Add(key)
	}
	<-allDone
	res := RetryResult{Wall: time.Since(start)}
	q.ShutDown()
	wg.Wait()
	for _, n := range attempts {
		res.Attempts += n
	}
	return res
}
