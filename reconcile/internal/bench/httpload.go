package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/converge-go/converge/store"
)

// LoadValue is the JSON value every load target stores: the same bytes on
// every backend.
type LoadValue struct {
	Counter int64  `json:"counter"`
	Writer  int    `json:"writer"`
	Note    string `json:"note"`
}

// LoadConfig is one load run: Clients goroutines doing read-modify-write
// compare-and-swap updates on Keys keys (uniformly at random) for Duration,
// while Watchers watches of the whole prefix count events.
type LoadConfig struct {
	Clients  int
	Watchers int
	Keys     int
	Duration time.Duration
	// Settle bounds the wait, after the last write, for every watcher to
	// have delivered it; a watcher still behind then has lost events.
	Settle time.Duration
	// Seed makes the key choices of a run reproducible.
	Seed uint64
}

// LoadResult is what one run measured.
type LoadResult struct {
	// Writes counts successful CAS updates, Conflicts the updates refused
	// with store.ErrConflict (each retried after a fresh Get).
	Writes, Conflicts int64
	// Elapsed is from the clients' start until the last one stopped.
	Elapsed time.Duration
	// CAS holds the round-trip time of every Update call, successful or
	// conflicting, sorted; RMW the time from a cycle's first Get to its
	// successful Update (retries included), sorted.
	CAS, RMW []time.Duration
	// Events is the number of change events each watcher delivered (all of
	// them verified); Resumes how often a watch ended (lagging, unavailable)
	// and was resumed after its last event.
	Events  []int
	Resumes int64
}

// CASPerSecond is the rate of successful CAS updates.
func (r LoadResult) CASPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Writes) / r.Elapsed.Seconds()
}

// Quantile returns the q-quantile (0 < q ≤ 1, nearest rank) of sorted
// durations, 0 for none.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Errors of a load run.
var (
	// ErrLoadAmbiguous: a write's answer was lost, so the set of writes a
	// watcher must see is unknown.
	ErrLoadAmbiguous = errors.New("bench: ambiguous write under load")
	// ErrLoadWatch: a watcher lost, repeated or reordered an event, or
	// its watch failed for good.
	ErrLoadWatch = errors.New("bench: watch verification failed")
)

// LoadKey is the key of the i-th object of a load run.
func LoadKey(i int) string { return fmt.Sprintf("load/k-%05d", i) }

// RunLoad seeds cfg.Keys objects in s (creating those missing), then runs
// the load and verifies the watches: every watcher must have delivered the
// revision of every successful write exactly once, in order, and nothing
// else. It fails with ErrLoadAmbiguous or ErrLoadWatch when that cannot
// be shown, or with the first unexpected store error.
func RunLoad(ctx context.Context, s store.Store[LoadValue], cfg LoadConfig) (LoadResult, error) {
	var res LoadResult
	if err := seedLoad(ctx, s, cfg.Keys); err != nil {
		return res, err
	}
	start, err := s.Revision(ctx)
	if err != nil {
		return res, fmt.Errorf("bench: revision: %w", err)
	}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watchers := make([]*loadWatcher, cfg.Watchers)
	var wg sync.WaitGroup
	for i := range watchers {
		w := &loadWatcher{s: s, after: start}
		if err := w.open(wctx); err != nil {
			return res, err
		}
		watchers[i] = w
		wg.Go(func() { w.run(wctx) })
	}
	clients := make([]loadClient, cfg.Clients)
	t0 := time.Now()
	deadline := t0.Add(cfg.Duration)
	var cwg sync.WaitGroup
	for i := range clients {
		c := &clients[i]
		c.id, c.rng = i, rand.New(rand.NewPCG(cfg.Seed, uint64(i)))
		cwg.Go(func() { c.err = c.run(ctx, s, cfg.Keys, deadline) })
	}
	cwg.Wait()
	res.Elapsed = time.Since(t0)
	var revs []int64
	for i := range clients {
		c := &clients[i]
		if c.err != nil && err == nil {
			err = c.err
		}
		res.Writes += int64(len(c.revs))
		res.Conflicts += c.conflicts
		revs = append(revs, c.revs...)
		res.CAS = append(res.CAS, c.cas...)
		res.RMW = append(res.RMW, c.rmw...)
	}
	slices.Sort(revs)
	slices.Sort(res.CAS)
	slices.Sort(res.RMW)
	if err != nil {
		return res, err
	}
	werr := awaitWatchers(watchers, revs, cfg.Settle)
	stopWatch()
	wg.Wait()
	for _, w := range watchers {
		res.Events = append(res.Events, len(w.seen))
		res.Resumes += w.resumes
		if werr == nil {
			werr = w.verify(revs)
		}
	}
	return res, werr
}

// seedLoad creates the keys that do not exist yet, 8 at a time.
func seedLoad(ctx context.Context, s store.Store[LoadValue], keys int) error {
	var g sync.WaitGroup
	errs := make([]error, 8)
	for w := range errs {
		g.Go(func() {
			for i := w; i < keys; i += len(errs) {
				_, err := s.Create(ctx, LoadKey(i), LoadValue{Note: "seed"})
				if err != nil && !errors.Is(err, store.ErrExists) {
					errs[w] = fmt.Errorf("bench: seed %s: %w", LoadKey(i), err)
					return
				}
			}
		})
	}
	g.Wait()
	return errors.Join(errs...)
}

// loadClient is one client goroutine's state; its fields are read after it
// stopped.
type loadClient struct {
	id        int
	rng       *rand.Rand
	revs      []int64
	cas, rmw  []time.Duration
	conflicts int64
	err       error
}

// run does read-modify-write cycles until deadline: Get a random key,
// increment its counter, Update at the revision read, and on a conflict
// Get again and retry.
func (c *loadClient) run(ctx context.Context, s store.Store[LoadValue], keys int, deadline time.Time) error {
	for time.Now().Before(deadline) {
		key := LoadKey(c.rng.IntN(keys))
		begin := time.Now()
		for {
			obj, err := s.Get(ctx, key)
			if err != nil {
				return fmt.Errorf("bench: client %d: get %s: %w", c.id, key, err)
			}
			v := obj.Value
			v.Counter++
			v.Writer = c.id
			sent := time.Now()
			out, err := s.Update(ctx, key, v, obj.Revision)
			done := time.Now()
			c.cas = append(c.cas, done.Sub(sent))
			if errors.Is(err, store.ErrConflict) {
				c.conflicts++
				continue
			}
			if errors.Is(err, store.ErrUnavailable) {
				return fmt.Errorf("%w: client %d: update %s: %w", ErrLoadAmbiguous, c.id, key, err)
			}
			if err != nil {
				return fmt.Errorf("bench: client %d: update %s: %w", c.id, key, err)
			}
			c.revs = append(c.revs, out.Revision)
			c.rmw = append(c.rmw, done.Sub(begin))
			break
		}
	}
	return nil
}

// loadWatcher watches the whole store from a revision and records the
// revision of every change it delivers, resuming after its last one when
// the watch ends with store.ErrLagging or store.ErrUnavailable.
type loadWatcher struct {
	s       store.Store[LoadValue]
	after   int64 // revision of the last event delivered
	w       store.Watcher[LoadValue]
	last    atomic.Int64
	seen    []int64 // read after run returned
	resumes int64
	err     error
}

func (w *loadWatcher) open(ctx context.Context) error {
	sw, err := w.s.Watch(ctx, "load/", w.after)
	if err != nil {
		return fmt.Errorf("%w: watch after %d: %w", ErrLoadWatch, w.after, err)
	}
	w.w = sw
	w.last.Store(w.after)
	return nil
}

func (w *loadWatcher) run(ctx context.Context) {
	for {
		for ev := range w.w.Events() {
			if ev.Type == store.Progress {
				continue
			}
			w.seen = append(w.seen, ev.Object.Revision)
			w.after = ev.Object.Revision
			w.last.Store(w.after)
		}
		err := w.w.Err()
		w.w.Stop()
		if ctx.Err() != nil {
			return
		}
		if !errors.Is(err, store.ErrLagging) && !errors.Is(err, store.ErrUnavailable) {
			w.err = fmt.Errorf("%w: watch ended: %w", ErrLoadWatch, err)
			return
		}
		w.resumes++
		if err := w.open(ctx); err != nil {
			if ctx.Err() == nil {
				w.err = err
			}
			return
		}
	}
}

// awaitWatchers polls until every watcher has delivered the last write,
// for at most settle.
func awaitWatchers(ws []*loadWatcher, revs []int64, settle time.Duration) error {
	if len(revs) == 0 {
		return nil
	}
	want := revs[len(revs)-1]
	limit := time.Now().Add(settle)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		behind := 0
		for _, w := range ws {
			if w.last.Load() < want {
				behind++
			}
		}
		if behind == 0 {
			return nil
		}
		if time.Now().After(limit) {
			return fmt.Errorf("%w: %d of %d watchers had not delivered revision %d %v after the last write", ErrLoadWatch, behind, len(ws), want, settle)
		}
		<-tick.C
	}
}

// verify checks that the watcher delivered exactly revs (sorted, one per
// successful write), in order.
func (w *loadWatcher) verify(revs []int64) error {
	if w.err != nil {
		return w.err
	}
	if slices.Equal(w.seen, revs) {
		return nil
	}
	seen := make(map[int64]int, len(w.seen))
	disorder := 0
	for i, r := range w.seen {
		seen[r]++
		if i > 0 && r <= w.seen[i-1] {
			disorder++
		}
	}
	lost, dup := 0, 0
	for _, r := range revs {
		switch n := seen[r]; {
		case n == 0:
			lost++
		case n > 1:
			dup += n - 1
		}
	}
	return fmt.Errorf("%w: %d events for %d writes: %d lost, %d repeated, %d out of order", ErrLoadWatch, len(w.seen), len(revs), lost, dup, disorder)
}
