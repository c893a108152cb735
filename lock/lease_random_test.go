package lock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// Randomized schedules: CONVERGE_LOCK_LONG=1 runs many more, and
// CONVERGE_LOCK_SEED=N starts from seed N (to replay a failure).
const (
	randomSchedules     = 200
	randomSchedulesLong = 5000
	randomRunTime       = 20 * time.Second
	randomTTL           = time.Second
	// Clock rates are drawn from [1-randomDrift, 1+randomDrift]: a ratio of
	// at most 1.22, within TTL/RenewDeadline = 1.5.
	randomDrift = 0.1
	dataKey     = "data"
)

// TestLeaseRandomSchedules runs 3 to 5 contenders over one store with random
// holding times, releases, store outages, frozen renewals, writers frozen
// between their check and their write, and clock rates, and checks:
//
//   - when a term is acquired, every earlier term's context is already
//     cancelled, and the [acquired, cancelled] intervals on the fake clock
//     never overlap;
//   - every guarded write the store accepted was made by the term current at
//     that revision (so tokens of accepted writes never go down);
//   - writes of deposed holders were attempted and rejected, and the lease
//     changed hands, so the run exercised what it checks.
func TestLeaseRandomSchedules(t *testing.T) {
	n := randomSchedules
	if os.Getenv("CONVERGE_LOCK_LONG") != "" {
		n = randomSchedulesLong
	}
	var base uint64 = 1
	if s := os.Getenv("CONVERGE_LOCK_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
		base = v
	}
	var total ledgerTotals
	for seed := base; seed < base+uint64(n); seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				total.add(runSchedule(t, seed))
			})
		})
	}
	t.Logf("%d schedules: %d terms, %d guarded writes accepted, %d rejected", n, total.terms, total.accepted, total.rejected)
	require.Greater(t, total.rejected, 0, "no deposed holder's write was ever tried")
	require.Greater(t, total.terms, 2*n, "the lease rarely changed hands")
}

type ledgerTotals struct{ terms, accepted, rejected int }

func (t *ledgerTotals) add(o ledgerTotals) {
	t.terms += o.terms
	t.accepted += o.accepted
	t.rejected += o.rejected
}

// term is one holder's tenure as the test saw it.
type term struct {
	holder              int
	lock                Lock
	acquired, cancelled time.Time
	ended               bool
}

// ledger collects what the contenders observed.
type ledger struct {
	t        *testing.T
	mu       sync.Mutex
	terms    []*term
	accepted int
	rejected int
}

// acquired records a new term and checks that no earlier term still
// believes it leads.
func (l *ledger) acquired(holder int, lk Lock) *term {
	tm := &term{holder: holder, lock: lk, acquired: time.Now()}
	l.mu.Lock()
	for _, o := range l.terms {
		if o.lock.Context().Err() == nil {
			l.t.Errorf("holder %d acquired token %d at %v while holder %d (token %d, since %v) still leads",
				holder, lk.Token(), tm.acquired, o.holder, o.lock.Token(), o.acquired)
		}
	}
	l.terms = append(l.terms, tm)
	l.mu.Unlock()
	context.AfterFunc(lk.Context(), func() {
		l.mu.Lock()
		tm.cancelled, tm.ended = time.Now(), true
		l.mu.Unlock()
	})
	return tm
}

func (l *ledger) wrote(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		l.accepted++
	case errors.Is(err, store.ErrGuardFailed):
		l.rejected++
	default:
		l.t.Errorf("guarded write: %v", err)
	}
}

// checkIntervals checks that the terms' [acquired, cancelled] intervals are
// disjoint and that tokens grow with them.
func (l *ledger) checkIntervals() {
	l.mu.Lock()
	defer l.mu.Unlock()
	terms := slices.Clone(l.terms)
	slices.SortFunc(terms, func(a, b *term) int { return a.acquired.Compare(b.acquired) })
	for i, tm := range terms {
		if !tm.ended {
			l.t.Errorf("term %d of holder %d never ended", tm.lock.Token(), tm.holder)
			continue
		}
		if i == 0 {
			continue
		}
		prev := terms[i-1]
		if tm.acquired.Before(prev.cancelled) {
			l.t.Errorf("holder %d led [%v, %v] and holder %d from %v: overlap",
				prev.holder, prev.acquired, prev.cancelled, tm.holder, tm.acquired)
		}
		if tm.lock.Token() <= prev.lock.Token() {
			l.t.Errorf("token %d after token %d", tm.lock.Token(), prev.lock.Token())
		}
	}
}

// contender is one process campaigning for the lease.
type contender struct {
	id     int
	lease  *Lease
	faults *faultStore
	data   store.Store[Record]
	rng    *rand.Rand
	ledger *ledger
}

// between returns a random duration in [lo, hi).
func (c *contender) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(c.rng.Int64N(int64(hi-lo)))
}

func (c *contender) run(ctx context.Context) {
	for ctx.Err() == nil {
		lk, err := c.lease.Acquire(ctx)
		if err != nil {
			return
		}
		c.ledger.acquired(c.id, lk)
		c.lead(ctx, lk)
		rctx, cancel := context.WithTimeout(context.Background(), 3*randomTTL)
		_ = lk.Release(rctx) // may fail while the store is down for us
		cancel()
		<-lk.Context().Done()
		wait(ctx, c.between(0, randomTTL/2))
	}
}

// lead works for a random time, writing with the lease's guard, with one
// random fault on the way.
func (c *contender) lead(ctx context.Context, lk Lock) {
	end := time.Now().Add(c.between(0, 3*randomTTL))
	fault := c.rng.IntN(5)
	faultAt := time.Now().Add(c.between(0, 2*randomTTL))
	for time.Now().Before(end) && lk.Context().Err() == nil && ctx.Err() == nil {
		wait(ctx, c.between(10*time.Millisecond, 200*time.Millisecond))
		if lk.Context().Err() != nil {
			return
		}
		if fault != 0 && time.Now().After(faultAt) {
			switch fault {
			case 1: // the store is unreachable for us
				c.faults.failFor(c.between(0, 2*randomTTL))
			case 2: // our renewal hangs
				c.faults.hangFor(c.between(0, 2*randomTTL))
			case 3: // our process freezes, a renewal in flight, the worker
				// between its check and its write
				d := c.between(0, 3*randomTTL)
				c.faults.pauseFor(d)
				wait(ctx, d)
			case 4: // our worker freezes between its check and its write
				wait(ctx, c.between(0, 3*randomTTL))
			}
			fault = 0
		}
		c.write(lk)
	}
}

// write sets the data key to this term's token, guarded by the lease.
func (c *contender) write(lk Lock) {
	ctx := context.Background()
	val := Record{Holder: strconv.Itoa(c.id), Renewals: lk.Token()}
	for {
		cur, err := c.data.Get(ctx, dataKey)
		if errors.Is(err, store.ErrNotFound) {
			_, err = c.data.Create(ctx, dataKey, val, lk.Guard())
		} else if err == nil {
			_, err = c.data.Update(ctx, dataKey, val, cur.Revision, lk.Guard())
		}
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrNotFound) {
			continue
		}
		c.ledger.wrote(err)
		return
	}
}

func wait(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

func runSchedule(t *testing.T, seed uint64) ledgerTotals {
	m := store.NewMemory[Record](store.WithHistory(1 << 20))
	defer m.Close()
	rng := rand.New(rand.NewPCG(seed, 0))
	led := &ledger{t: t}
	ctx, cancel := context.WithTimeout(t.Context(), randomRunTime)
	defer cancel()

	var wg sync.WaitGroup
	for id := range 3 + rng.IntN(3) {
		fs := newFaultStore(t, m)
		l, err := NewLease(fs, "leader", LeaseOptions{Holder: strconv.Itoa(id), TTL: randomTTL})
		require.NoError(t, err)
		l.clock = clock{rate: 1 - randomDrift + 2*randomDrift*rng.Float64()}
		c := &contender{id: id, lease: l, faults: fs, data: m, rng: rand.New(rand.NewPCG(seed, uint64(id)+1)), ledger: led}
		wg.Go(func() { c.run(ctx) })
	}
	wg.Wait()
	synctest.Wait() // let the last cancellations be recorded

	led.checkIntervals()
	checkFencedWrites(t, m)
	led.mu.Lock()
	defer led.mu.Unlock()
	return ledgerTotals{terms: len(led.terms), accepted: led.accepted, rejected: led.rejected}
}

// checkFencedWrites replays the store's history and checks that every write
// to the data key carries the token of the lease term current at its
// revision, hence that tokens never go down in revision order.
func checkFencedWrites(t *testing.T, m *store.Memory[Record]) {
	ctx := context.Background()
	last, err := m.Revision(ctx)
	require.NoError(t, err)
	w, err := m.Watch(ctx, "", 0)
	require.NoError(t, err)
	defer w.Stop()
	var current, lastToken int64
	for rev := int64(0); rev < last; {
		ev, ok := <-w.Events()
		require.True(t, ok, "history ended early: %v", w.Err())
		rev = ev.Object.Revision
		switch ev.Object.Key {
		case "leader":
			if ev.Type == store.Deleted {
				current = 0
			} else {
				current = ev.Object.CreateRevision
			}
		case dataKey:
			if ev.Type == store.Deleted {
				continue
			}
			token := ev.Object.Value.Renewals
			if token != current {
				t.Errorf("revision %d: write by holder %s with token %d accepted while the term was %d",
					rev, ev.Object.Value.Holder, token, current)
			}
			if token < lastToken {
				t.Errorf("revision %d: token %d after token %d", rev, token, lastToken)
			}
			lastToken = token
		}
	}
}
