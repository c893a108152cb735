package bench

import (
	"sync"
	"sync/atomic"
	"time"
)

// StormConfig sizes scenario S2.
type StormConfig struct {
	Producers       int // goroutines adding keys
	AddsPerProducer int // adds each producer makes
	Workers         int // goroutines getting keys
}

// StormResult is what one run of scenario S2 measured.
type StormResult struct {
	Wall             time.Duration // first add until the queue is idle
	AddPhase         time.Duration // first add until the last add returned
	Handed           int64         // keys handed out in all
	HandedDuringAdds int64         // keys handed out before the last add returned
	Distinct         int           // distinct keys handed out
}

// stormWorker is one worker's tally. Workers count in locals and write it
// once at the end, so they share no counters on the hot path.
type stormWorker struct {
	handed, duringAdds int64
	seen               []bool
}

// Storm is scenario S2: producers add keys round-robin over the key space
// while workers Get and Done as fast as they can. It returns once every add
// has been handed out and finished (the queue is idle) and the queue is shut
// down.
func Storm(q Queue, keys []string, cfg StormConfig) StormResult {
	var (
		addsDone atomic.Bool
		inFlight atomic.Int64
		stopOnce sync.Once
	)
	// Once the adds are over, the queue is idle for good when no key is in
	// flight and none is waiting: only Done can re-queue a key, and only a
	// key in flight can be Done. A worker between Get and inFlight.Add(1) is
	// missed, so the workers are not stopped by ShutDown (which could make
	// that Get report a shutdown and lose its key) but by one stop key each,
	// which they take only after every real key.
	idle := func() bool { return addsDone.Load() && inFlight.Load() == 0 && q.Len() == 0 }
	stop := func() {
		stopOnce.Do(func() {
			for _, key := range stopKeys(cfg.Workers) {
				q.Add(key)
			}
		})
	}

	tallies := make([]stormWorker, cfg.Workers)
	start := time.Now()
	var workers sync.WaitGroup
	for w := range tallies {
		t := &tallies[w]
		workers.Go(func() {
			var handed, duringAdds int64
			seen := make([]bool, len(keys))
			defer func() { *t = stormWorker{handed, duringAdds, seen} }()
			for {
				key, ok := q.Get()
				if !ok {
					return
				}
				if isStopKey(key) {
					q.Done(key)
					return
				}
				inFlight.Add(1)
				handed++
				if !addsDone.Load() {
					duringAdds++
				}
				seen[KeyIndex(key)] = true
				q.Done(key)
				if inFlight.Add(-1) == 0 && idle() {
					stop()
				}
			}
		})
	}

	var producers sync.WaitGroup
	for p := range cfg.Producers {
		offset := p * len(keys) / cfg.Producers
		producers.Go(func() {
			for i := range cfg.AddsPerProducer {
				q.Add(keys[(offset+i)%len(keys)])
			}
		})
	}
	producers.Wait()
	res := StormResult{AddPhase: time.Since(start)}
	addsDone.Store(true)
	if idle() {
		stop()
	}
	workers.Wait()
	res.Wall = time.Since(start)
	q.ShutDown()
	res.count(tallies, len(keys))
	return res
}

// count adds the workers' tallies of a key space of n keys to res: the
// keys handed out, those handed out during the adds, and the distinct
// keys any worker saw.
func (res *StormResult) count(tallies []stormWorker, n int) {
	seen := make([]bool, n)
	for _, t := range tallies {
		res.Handed += t.handed
		res.HandedDuringAdds += t.duringAdds
		for i, s := range t.seen {
			seen[i] = seen[i] || s
		}
	}
	for _, s := range seen {
		if s {
			res.Distinct++
		}
	}
}
